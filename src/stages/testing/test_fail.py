# Put in the folder the test command runs from when no test-sources are given, as
# cibuildwheel does: a bare `pytest` (or `python -m unittest`) there collects this file
# and fails with the reason, instead of finding no tests or the project's sources.
import unittest


class TestsRunFromAnotherFolder(unittest.TestCase):
    def test_fail(self):
        self.fail(
            "cibuildwheel executes tests from a different working directory to "
            "your project. This ensures only your wheel is imported, preventing "
            "Python from accessing files that haven't been packaged into the "
            "wheel. "
            "\n\n"
            "Please specify a path to your tests when invoking pytest "
            "using the {project} placeholder, e.g. `pytest {project}` or "
            "`pytest {project}/tests`. cibuildwheel will replace {project} with "
            "the path to your project. "
            "\n\n"
            "Alternatively, you can specify your test files using the "
            "`test-sources` option, and cibuildwheel will copy them to the "
            "working directory for testing."
        )
