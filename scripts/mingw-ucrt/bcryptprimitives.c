/* Wine 8.0 (Debian 12) lacks bcryptprimitives.dll, which the Go runtime
   (1.24+) loads at start for ProcessPrng. This shim forwards it to
   advapi32's RtlGenRandom (SystemFunction036). For running Go test binaries
   under Wine only. */
#include <windows.h>
BOOLEAN WINAPI SystemFunction036(PVOID, ULONG);
__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
    while (len > 0) {
        ULONG n = len > 0x7fffffff ? 0x7fffffff : (ULONG)len;
        if (!SystemFunction036(data, n)) return FALSE;
        data += n; len -= n;
    }
    return TRUE;
}
