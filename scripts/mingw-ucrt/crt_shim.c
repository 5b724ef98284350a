/* Symbols that DuckDB's UCRT-built objects, or Debian's msvcrt-built
   winpthreads, name but Debian's libucrt.a (mingw-w64 10) lacks. */
#include <stdarg.h>
#include <stddef.h>

int _vsnprintf(char *buf, size_t n, const char *fmt, va_list ap);

int _snprintf(char *buf, size_t n, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int r = _vsnprintf(buf, n, fmt, ap);
    va_end(ap);
    return r;
}

/* msvcrt's _setjmp is UCRT's __intrinsic_setjmp: a tail jump keeps the
   caller's frame, as setjmp requires. */
__asm__(
    ".globl _setjmp\n"
    "_setjmp:\n"
    "    jmp *__imp___intrinsic_setjmp(%rip)\n");
