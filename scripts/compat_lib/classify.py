"""Why a cell is not green, and whose fault that is.

Each rule is a pattern searched in the cell's output (crosswheel's stdout and stderr, plus
the build log crosswheel names on its `full log:` line). The first rule that matches
names the cause. A cell no rule explains is reported as `unclassified`, never guessed.

Faults:
  crosswheel   crosswheel does something wrong or lacks something the issue tracker
               asks of it (the issue is named)
  outside      nothing crosswheel can do on this host (no SDK, a test that cannot run
               under qemu-user, a project that needs its maintainers' help)
  recipe       the corpus's recipe for the project is wrong or incomplete
  unclassified no rule matched: read the log
"""

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Rule:
    pattern: str
    cause: str
    fault: str


RULES = [
    Rule(
        r"unsupported build backend",
        "crosswheel drives only setuptools, meson-python and scikit-build-core; an in-tree backend wrapping one of them is refused",
        "crosswheel",
    ),
    Rule(
        r"cannot open shared object file.*\n?.*(x86-64|x86_64)|wrong ELF class|ELF.*x86-64.*expected",
        "a test requirement was built with the host's x86-64 compiler for the target (issue 16)",
        "crosswheel",
    ),
    Rule(
        r"No matching distribution found for (\S+)",
        "a test requirement has no wheel for the target on the index and no other source (issue 16)",
        "crosswheel",
    ),
    Rule(
        r"'linux/[a-z_]+\.h' file not found|_psutil_linux\.c.*macos",
        "the build read the host's sys.platform/os.uname() and compiled Linux sources for macOS (issue 15)",
        "crosswheel",
    ),
    Rule(
        r"no LLVM CPU feature named \"sse|-msse2|unsupported option '-m(sse|avx)",
        "the build asked the host's platform.machine() and passed x86 flags to the target compiler (issue 15)",
        "crosswheel",
    ),
    Rule(
        r"Can not run test applications in this cross environment|needs_exe_wrapper",
        "meson's cross file names no exe_wrapper, so cc.run() checks cannot run target programs (issue 15)",
        "crosswheel",
    ),
    Rule(
        r"temp\.macosx-[\s\S]*cannot run C compiled programs",
        "the build runs the programs it compiles (configure without --host), and a macOS program cannot run on "
        "this Linux host; issue 15 asks crosswheel only to name the program",
        "outside",
    ),
    Rule(
        r"cannot run C compiled programs|could not open '/lib/ld-linux|qemu-\w+: Could not open '/lib",
        "the build runs target programs and they do not reach qemu with the target root (issue 15)",
        "crosswheel",
    ),
    Rule(
        r"LTO requires using LLD|R_PPC64_REL16_HA",
        "link-time optimisation zig cannot do for this target (issue 15)",
        "crosswheel",
    ),
    Rule(
        r"framework '?\w+'? not found|unable to find framework|-framework \w+.*not found"
        r"|Dependency \"(Accelerate|CoreFoundation|IOKit|Security)\" not found",
        "links an Apple framework and no macOS SDK was given (issue 15: SDK support; an SDK is outside this host)",
        "outside",
    ),
    Rule(
        r"'(netinet/tcp_fsm|libproc|mach/[\w/]+|sys/sysctl|CoreFoundation/[\w]+|IOKit/[\w/]+)\.h' file not found",
        "needs macOS SDK headers that zig does not ship; give one with the macos-sdk option (an SDK is outside this host)",
        "outside",
    ),
    Rule(
        r"'endian\.h' file not found",
        "compiled against the host's numpy headers instead of the target's (issue 15)",
        "crosswheel",
    ),
    Rule(
        r"_sysconfigdata__\w+'|No module named '_sysconfigdata",
        "the cross environment's sysconfig data was lost (issue 15)",
        "crosswheel",
    ),
    Rule(
        r"(yum|apt-get|apk|brew): (command )?not found",
        "an upstream before-all installs system packages with the build image's package manager",
        "recipe",
    ),
    Rule(
        r"has no ELF files, so there is nothing to repair|py3-none-any\.whl",
        "the extension build failed and the project fell back to a pure wheel (issue 15)",
        "crosswheel",
    ),
    Rule(
        r"nanobind/stubgen\.py",
        "nanobind's stub generation imports the just-built target extension with the build interpreter "
        "(CMake's Python_EXECUTABLE is the host's); it needs the target interpreter under qemu "
        "(issue 15: target programs during the build), or the project to skip stubs when CMAKE_CROSSCOMPILING",
        "crosswheel",
    ),
    Rule(
        r"unsupported linker arg: @",
        "zig's Mach-O linker rejects a response file (-Wl,@file; nanobind's darwin-ld-cpython.sym lists the "
        "symbols to leave undefined); crosswheel's compiler wrapper could expand it (not yet in an issue)",
        "crosswheel",
    ),
    Rule(
        r"TestMiscAPIs::test_users - assert \[\]",
        "psutil.users() is empty because no one is logged in on this host (no utmp; `who` prints nothing "
        "natively either): the test fails the same way outside qemu",
        "outside",
    ),
    Rule(
        r"Too many bins for data range",
        "the test compares with numpy.histogram, which in today's numpy (2.4.6) rejects the subnormal range hypothesis "
        "generates; the same call raises natively on x86-64: upstream's test against a newer numpy",
        "outside",
    ),
    Rule(
        r"hypothesis\.errors\.DeadlineExceeded",
        "a hypothesis test exceeded its 200 ms deadline under qemu-user (emulation is 5-20x slower); the recipe should disable the deadline",
        "recipe",
    ),
    Rule(
        r"OpenBLAS or Netlib BLAS/CBLAS is required|Dependency \"?(openblas|blas|lapack)\"? not found",
        "BLAS was not found by the build: the recipe must point it at the target's OpenBLAS",
        "recipe",
    ),
]


def classify(text):
    """(cause, fault) for a cell's output, or an unclassified pair."""
    for rule in RULES:
        if re.search(rule.pattern, text):
            return rule.cause, rule.fault
    return "no rule matched: see the log", "unclassified"


def first_error_line(text, built):
    """The first line that reads like a real test error (for a built wheel), or a
    compiler, linker or build error (for a failed build)."""
    test_patterns = [r"^FAILED \S+.*$", r"^ERROR \S+.*$", r"^E\s+\w*(Error|Exception)\b.*$"]
    for pattern in test_patterns if built else []:
        match = re.search(pattern, text, re.MULTILINE)
        if match:
            return match.group(0).strip()[:300]
    patterns = [
        r"^.*\b(fatal )?error: .*$",
        r"^.*\bERROR: .*$",
        r"^E\s+\w*Error: .*$",
        r"^FAILED .*$",
        r"^.*Error: .*$",
    ]
    for pattern in patterns:
        match = re.search(pattern, text, re.MULTILINE)
        if match:
            return match.group(0).strip()[:300]
    return ""
