// ipc_share.cu — memory shared between two processes, the ways NCCL and PyTorch
// share it: a CUDA IPC handle of a cudaMalloc buffer, and a VMM handle exported as a file
// descriptor and imported by the peer (cuMemImportFromShareableHandle, then cuMemMap).
//
// The process forks before touching CUDA. The owner cudaMallocs 32 MiB and makes a 2 MiB-granular
// VMM allocation (cuMemCreate, exportable as a POSIX file descriptor), sends the IPC handle and
// the descriptor over a socket; the peer opens the IPC handle (cudaIpcOpenMemHandle), imports
// the descriptor, maps it, retains it through its address (cuMemRetainAllocationHandle) and
// releases everything, then the owner frees its memory. Both free everything they own.
//
// What the report should show (`gmemhook run build/bin/samples/ipc_share`, then `gmemhook
// summary`): two processes; the owner with 32 MiB + one VMM handle allocated and freed; the
// peer with no allocation of its own, the imported memory counted as mapped, and no note about
// unknown handles, unknown maps or frees of addresses that were not live. Nothing leaks.
#include <cuda.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "sample_check.h"

#define CHECK_CU(call) check_cu((call), #call, __FILE__, __LINE__)

namespace {

constexpr std::size_t kIpcBytes = 32 * kMiB;

void check_cu(CUresult r, const char* what, const char* file, int line) {
  if (r == CUDA_SUCCESS) return;
  const char* name = nullptr;
  cuGetErrorName(r, &name);
  std::fprintf(stderr, "%s:%d: %s failed: %s\n", file, line, what, name ? name : "?");
  std::exit(1);
}

struct Message {
  cudaIpcMemHandle_t ipc;
  std::size_t vmm_bytes;
};

// One Message and room for one descriptor: the shape of both ends of the exchange.
struct Envelope {
  iovec iov;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  explicit Envelope(Message* m) : iov{m, sizeof *m} {
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
  }
};

// Sends `m` and the descriptor `fd` (SCM_RIGHTS) over the socket.
void send_message(int sock, Message m, int fd) {
  Envelope e(&m);
  msghdr& msg = e.msg;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
  if (sendmsg(sock, &msg, 0) != static_cast<ssize_t>(sizeof m)) std::perror("sendmsg"), std::exit(1);
}

int receive_message(int sock, Message* m) {
  Envelope e(m);
  msghdr& msg = e.msg;
  if (recvmsg(sock, &msg, 0) != static_cast<ssize_t>(sizeof *m)) std::perror("recvmsg"), std::exit(1);
  int fd = -1;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  if (c && c->cmsg_type == SCM_RIGHTS) std::memcpy(&fd, CMSG_DATA(c), sizeof fd);
  return fd;
}

CUmemAllocationProp vmm_prop(int device) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  return prop;
}

}  // namespace

SAMPLE_FRAME void peer(int sock, int device) {
  Message m;
  const int fd = receive_message(sock, &m);
  CHECK_CUDA(cudaSetDevice(device));
  void* opened = nullptr;
  CHECK_CUDA(cudaIpcOpenMemHandle(&opened, m.ipc, cudaIpcMemLazyEnablePeerAccess));
  fill(opened, kIpcBytes, 9);
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CUDA(cudaIpcCloseMemHandle(opened));

  CUmemGenericAllocationHandle imported, retained;
  CHECK_CU(cuMemImportFromShareableHandle(&imported, reinterpret_cast<void*>(static_cast<intptr_t>(fd)),
                                          CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
  close(fd);
  CUdeviceptr va = 0;
  CHECK_CU(cuMemAddressReserve(&va, m.vmm_bytes, 0, 0, 0));
  CHECK_CU(cuMemMap(va, m.vmm_bytes, 0, imported, 0));
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = device;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  CHECK_CU(cuMemSetAccess(va, m.vmm_bytes, &access, 1));
  CHECK_CU(cuMemRetainAllocationHandle(&retained, reinterpret_cast<void*>(va)));
  fill(reinterpret_cast<void*>(va), m.vmm_bytes, 10);
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CU(cuMemRelease(retained));
  CHECK_CU(cuMemRelease(imported));  // still mapped: the memory stays until the unmap
  CHECK_CU(cuMemUnmap(va, m.vmm_bytes));
  CHECK_CU(cuMemAddressFree(va, m.vmm_bytes));
  const char done = 1;
  if (write(sock, &done, 1) != 1) std::perror("write"), std::exit(1);
}

SAMPLE_FRAME void owner(int sock, int device) {
  CHECK_CUDA(cudaSetDevice(device));
  void* buffer = nullptr;
  CHECK_CUDA(cudaMalloc(&buffer, kIpcBytes));
  Message m{};
  CHECK_CUDA(cudaIpcGetMemHandle(&m.ipc, buffer));
  const CUmemAllocationProp prop = vmm_prop(device);
  std::size_t granularity = 0;
  CHECK_CU(cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  m.vmm_bytes = granularity;
  CUmemGenericAllocationHandle handle;
  CHECK_CU(cuMemCreate(&handle, m.vmm_bytes, &prop, 0));
  int fd = -1;
  CHECK_CU(cuMemExportToShareableHandle(&fd, handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  send_message(sock, m, fd);
  close(fd);
  char done = 0;
  if (read(sock, &done, 1) != 1) std::perror("read"), std::exit(1);
  CHECK_CU(cuMemRelease(handle));
  CHECK_CUDA(cudaFree(buffer));
}

int main() {
  int socks[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, socks) != 0) return std::perror("socketpair"), 1;
  // Before any CUDA call: a child forked after CUDA is initialised cannot use it.
  const pid_t child = fork();
  if (child < 0) return std::perror("fork"), 1;
  if (child == 0) {
    close(socks[0]);
    peer(socks[1], 0);
    return 0;
  }
  close(socks[1]);
  owner(socks[0], 0);
  int status = 0;
  waitpid(child, &status, 0);
  const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  std::printf("ipc_share: owner %d, peer %d (%s); %zu bytes by IPC, one VMM handle by fd\n",
              getpid(), child, ok ? "ok" : "failed", kIpcBytes);
  std::printf("expected leaked 0 bytes\n");
  return ok ? 0 : 1;
}
