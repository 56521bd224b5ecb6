/* Compiled for each target against the cross environment's headers: every configure
 * answer in pyconfig.h that an extension's layout depends on must be the target's. */
#include <Python.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <wchar.h>

#define SAME(macro, actual) _Static_assert((macro) == (actual), #macro " is not the target's")

SAME(SIZEOF_SHORT, sizeof(short));
SAME(SIZEOF_INT, sizeof(int));
SAME(SIZEOF_LONG, sizeof(long));
SAME(SIZEOF_LONG_LONG, sizeof(long long));
SAME(SIZEOF_FLOAT, sizeof(float));
SAME(SIZEOF_DOUBLE, sizeof(double));
SAME(SIZEOF_LONG_DOUBLE, sizeof(long double));
SAME(SIZEOF_VOID_P, sizeof(void *));
SAME(SIZEOF_SIZE_T, sizeof(size_t));
SAME(SIZEOF_UINTPTR_T, sizeof(uintptr_t));
SAME(SIZEOF_WCHAR_T, sizeof(wchar_t));
SAME(SIZEOF_TIME_T, sizeof(time_t));
SAME(SIZEOF_OFF_T, sizeof(off_t));
SAME(SIZEOF_PID_T, sizeof(pid_t));
SAME(SIZEOF_FPOS_T, sizeof(fpos_t));
SAME(SIZEOF_PTHREAD_T, sizeof(pthread_t));
SAME(SIZEOF_PTHREAD_KEY_T, sizeof(pthread_key_t));
SAME(SIZEOF__BOOL, sizeof(_Bool));
SAME(ALIGNOF_LONG, _Alignof(long));
SAME(ALIGNOF_SIZE_T, _Alignof(size_t));
#ifdef ALIGNOF_MAX_ALIGN_T
SAME(ALIGNOF_MAX_ALIGN_T, _Alignof(max_align_t));
#endif

#if defined(WORDS_BIGENDIAN) != defined(__BIG_ENDIAN__)
#error "WORDS_BIGENDIAN is not the target's"
#endif
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#if !defined(DOUBLE_IS_BIG_ENDIAN_IEEE754) || defined(DOUBLE_IS_LITTLE_ENDIAN_IEEE754)
#error "the double byte order is not the target's (big-endian)"
#endif
#else
#if !defined(DOUBLE_IS_LITTLE_ENDIAN_IEEE754) || defined(DOUBLE_IS_BIG_ENDIAN_IEEE754)
#error "the double byte order is not the target's (little-endian)"
#endif
#endif
#if defined(HAVE_GCC_ASM_FOR_X64) && !defined(__x86_64__)
#error "HAVE_GCC_ASM_FOR_X64 on a target that is not x86_64"
#endif
#if defined(HAVE_GCC_ASM_FOR_X87) && !defined(__i386__) && !defined(__x86_64__)
#error "HAVE_GCC_ASM_FOR_X87 on a target without x87"
#endif
#ifdef HAVE_USABLE_WCHAR_T
_Static_assert((wchar_t)-1 > 0, "HAVE_USABLE_WCHAR_T but the target's wchar_t is signed");
#else
_Static_assert((wchar_t)-1 < 0, "HAVE_USABLE_WCHAR_T missing but the target's wchar_t is unsigned");
#endif

/* The struct stat fields the nanosecond macros name (gevent's stathelper.c reads them). */
#ifdef HAVE_STAT_TV_NSEC
long probe_stat_tv_nsec(const struct stat *st) { return st->st_atim.tv_nsec; }
#endif
#ifdef HAVE_STAT_TV_NSEC2
long probe_stat_tv_nsec2(const struct stat *st) { return st->st_atimespec.tv_nsec; }
#endif

int probe(void) { return (int)PY_VERSION_HEX; }
