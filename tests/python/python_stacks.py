"""Allocates on the simulated CUDA runtime through ctypes from known Python places, for the
recorder's Python-frame tests (python_stacks_test.cpp).

Usage: python3 python_stacks.py <libcudart.so>

Each cudaMalloc prints one line, in call order:
    EXPECT<TAB>function|line|filename<TAB>...     (innermost frame first)
where function is the frame's co_qualname (co_name before 3.11) and line its f_lineno at the
moment of the call: exactly what the recorder must reconstruct from raw interpreter memory.
"""
import asyncio
import ctypes
import functools
import gc
import sys
import threading

lib = ctypes.CDLL(sys.argv[1])
lib.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
lib.cudaMalloc.restype = ctypes.c_int
lib.cudaFree.argtypes = [ctypes.c_void_p]
lib.cudaFree.restype = ctypes.c_int


def frames_from(frame):
    out = []
    while frame is not None:
        code = frame.f_code
        name = getattr(code, "co_qualname", code.co_name)
        out.append(f"{name}|{frame.f_lineno}|{code.co_filename}")
        frame = frame.f_back
    return out


def alloc(size=256):
    p = ctypes.c_void_p()
    # Both calls on one line: this frame's f_lineno when the stack is taken is the cudaMalloc line.
    expected = frames_from(sys._getframe()); rc = lib.cudaMalloc(ctypes.byref(p), size)
    assert rc == 0, rc
    print("EXPECT\t" + "\t".join(expected), flush=True)
    lib.cudaFree(p)
    return p.value


# --- Plain calls, methods, closures ---------------------------------------------------------

class Model:
    def forward(self):
        return alloc(512)


def nested():
    def inner():
        return alloc()
    return inner()


def recurse(n):
    if n == 0:
        return alloc()
    return recurse(n - 1)


def in_handlers():
    try:
        raise ValueError("x")
    except ValueError:
        alloc()
    finally:
        alloc()


# --- Frames run by their own interpreter-loop calls ----------------------------------------

def gen():
    yield alloc()
    yield alloc()


def delegating_gen():
    yield from gen()


def generators():
    next(gen())
    for _ in gen():
        pass
    list(delegating_gen())


async def inner_coro():
    await asyncio.sleep(0)
    return alloc()


async def outer_coro():
    return await inner_coro()


def coroutines():
    asyncio.run(outer_coro())
    c = inner_coro()
    try:
        while True:
            c.send(None)
    except StopIteration:
        pass


def key_fn(x):
    alloc()
    return x


def called_from_c():
    sorted([2, 1], key=key_fn)
    list(map(lambda x: alloc(x), [64]))
    [alloc() for _ in range(1)]


# --- Code compiled at run time: far lines, long lines, non-ASCII names ---------------------

GENERATED = "\n" * 5000 + (
    "def far_away():\n"
    "    x = 1\n"
    + "    " + "y = (" + " + ".join(["x"] * 60) + ")\n"   # columns past 127: long-form entries
    + "    " + "_ = " + " " * 150 + "alloc()\n"
    + "    return 0\n"
    "def funci\u00f3n():\n"
    "    return alloc()\n"
)


def generated_code():
    ns = {"alloc": alloc}
    exec(compile(GENERATED, "generated_m\u00f3dulo.py", "exec"), ns)
    ns["far_away"]()
    ns["funci\u00f3n"]()


def big_function():
    # Enough bytecode between the start and the call for multi-byte offsets and long jumps.
    total = 0
    for i in range(3):
        total += i * 2
        total -= i
        total *= 1
        total //= 1
        total = total + 0 - 0
        total = [total][0]
        total = {"k": total}["k"]
        total = (total, 1)[0]
    s = str(total) + "a" + "b" + "c" + "d" + "e" + "f" + "g" + "h" + "i" + "j"
    if len(s) > 0:
        return alloc()


# --- Python run by the garbage collector, in the middle of setting up a call ----------------

gc_allocations = []


def on_gc(phase, info):
    if phase == "start" and len(gc_allocations) < 20:
        gc_allocations.append(alloc())


def gen_with_cell(a):
    def cell():
        return a
    yield cell


def gc_callbacks():
    # Collections as often as possible: some start while gen_with_cell's frame is still being set
    # up (MAKE_CELL allocates), where 3.10 has f_lasti = -1 and 3.11+ frames may be incomplete.
    gc.collect()
    gc.callbacks.append(on_gc)
    old = gc.get_threshold()
    gc.set_threshold(1)
    try:
        for i in range(50):
            gen_with_cell(i)
    finally:
        gc.set_threshold(*old)
        gc.callbacks.remove(on_gc)


def site_a():
    return alloc(192)


def site_b():
    return alloc(192)


def sites_in_turn():
    # Two places, same Python depth, the same native frames below the interpreter loop, taking
    # turns as a training loop's allocations do: once the fast unwinder reuses its recent walks,
    # only the Python frames tell these stacks apart (the recorder's memo of stack ids).
    for _ in range(40):
        site_a()
        site_b()


def shared_helper():
    return alloc(160)


def via_a():
    return shared_helper()


def via_b():
    return shared_helper()


def helpers_in_turn():
    # As sites_in_turn, but the two paths part only in the third Python frame: their innermost
    # two, which tell the native walk's recent copies apart, are alike, so both share one walk
    # and the stack id kept with it must be told apart by every Python frame.
    for _ in range(40):
        via_a()
        via_b()


def lines_in_turn():
    # One caller, two lines, the same helper: every frame sits where the previous call's did,
    # running the same code at the same instruction, except the caller's, which is a line further
    # (the recorder reuses what its previous walk read of a frame only when all of that matches).
    for _ in range(40):
        shared_helper()
        shared_helper()


def entries_in_turn():
    # The same helper from the same line, called straight and through C in turn: the frames sit
    # at the same places at the same instructions, but only through C does the helper's frame
    # start an interpreter-loop call (its is_entry mark, or a shim frame below it).
    for call in [shared_helper, functools.partial(shared_helper)] * 20:
        call()


def loop_site():
    for _ in range(50):
        alloc(128)


def main():
    Model().forward()
    nested()
    recurse(20)
    in_handlers()
    generators()
    coroutines()
    called_from_c()
    generated_code()
    big_function()
    t = threading.Thread(target=Model().forward, name="worker")
    t.start()
    t.join()
    gc_callbacks()
    sites_in_turn()
    helpers_in_turn()
    lines_in_turn()
    entries_in_turn()
    loop_site()


if __name__ == "__main__":
    main()
