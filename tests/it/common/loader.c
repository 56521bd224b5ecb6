/* Loads shared libraries the way an extension module is loaded, then calls into them.
 *
 *   loader [--ddot SYMBOL] [--call SYMBOL] LIBRARY...
 *
 * Every LIBRARY is dlopen()ed with RTLD_NOW | RTLD_GLOBAL, so unresolved symbols,
 * missing DT_NEEDED files and version mismatches fail here. Then:
 *   --ddot SYMBOL  calls the cblas_ddot-compatible SYMBOL on x = 1..4, y = 5..8
 *   --call SYMBOL  calls `double SYMBOL(void)`
 * and prints each result as "SYMBOL=VALUE" with %.6f. Exit status 1 on any failure.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

typedef double (*ddot_fn)(int n, const double *x, int incx, const double *y, int incy);
typedef double (*call_fn)(void);

static void *find(const char *name) {
    void *symbol = dlsym(RTLD_DEFAULT, name);
    if (symbol == NULL) {
        fprintf(stderr, "loader: symbol %s not found: %s\n", name, dlerror());
    }
    return symbol;
}

int main(int argc, char **argv) {
    const char *ddot = NULL;
    const char *call = NULL;
    int loaded = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--ddot") == 0 && i + 1 < argc) {
            ddot = argv[++i];
        } else if (strcmp(argv[i], "--call") == 0 && i + 1 < argc) {
            call = argv[++i];
        } else if (dlopen(argv[i], RTLD_NOW | RTLD_GLOBAL) == NULL) {
            fprintf(stderr, "loader: dlopen %s failed: %s\n", argv[i], dlerror());
            return 1;
        } else {
            loaded++;
        }
    }
    if (loaded == 0) {
        fprintf(stderr, "usage: loader [--ddot SYMBOL] [--call SYMBOL] LIBRARY...\n");
        return 1;
    }
    if (ddot != NULL) {
        ddot_fn function = (ddot_fn)find(ddot);
        if (function == NULL) {
            return 1;
        }
        const double x[] = {1, 2, 3, 4};
        const double y[] = {5, 6, 7, 8};
        printf("%s=%.6f\n", ddot, function(4, x, 1, y, 1));
    }
    if (call != NULL) {
        call_fn function = (call_fn)find(call);
        if (function == NULL) {
            return 1;
        }
        printf("%s=%.6f\n", call, function());
    }
    return 0;
}
