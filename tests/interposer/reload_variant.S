/* One of two small libraries that the "reload" scenario loads one after the other at the same
   addresses (scenario_reload.cpp): each exports one function that calls cudaMalloc(rdi, rsi).
   The two functions lie at the same offset and make the call at the same offset, so the return
   address into them is the same, but they unwind differently: A keeps a frame pointer (CFA from
   rbp), B leaves rbp alone and takes a 4 KiB frame (CFA from rsp). Hand-written so that the
   offsets are equal by construction, not by the compiler's choice. */
        .text
        .p2align 4
        .globl  RELOAD_FUNCTION
        .type   RELOAD_FUNCTION, @function
RELOAD_FUNCTION:
        .cfi_startproc
#ifdef RELOAD_VARIANT_B
        subq    $4104, %rsp             /* 7 bytes */
        .cfi_def_cfa_offset 4112
        nop                             /* 1 byte: the call at offset 8, as in A */
        call    cudaMalloc@PLT
        addq    $4104, %rsp
        .cfi_def_cfa_offset 8
        ret
#else
        pushq   %rbp                    /* 1 byte */
        .cfi_def_cfa_offset 16
        .cfi_offset %rbp, -16
        movq    %rsp, %rbp              /* 3 bytes */
        .cfi_def_cfa_register %rbp
        subq    $16, %rsp               /* 4 bytes: the call at offset 8 */
        call    cudaMalloc@PLT
        leave
        .cfi_def_cfa %rsp, 8
        ret
        .fill   6, 1, 0x90              /* as long as B */
#endif
        .cfi_endproc
        .size   RELOAD_FUNCTION, .-RELOAD_FUNCTION
        .section .note.GNU-stack,"",@progbits
