#!/usr/bin/env python3
"""Counts the test cases of JUnit/xUnit XML reports (lit's and pytest's).

Prints one line, `N passed, N failed, N skipped`, last, and exits non-zero when
anything failed or when no test ran at all.
"""

import sys
import xml.etree.ElementTree as ET


def main(paths):
    passed = failed = skipped = 0
    for path in paths:
        for case in ET.parse(path).iter("testcase"):
            if case.find("failure") is not None or case.find("error") is not None:
                failed += 1
            elif case.find("skipped") is not None:
                skipped += 1
            else:
                passed += 1
    if passed + failed == 0:
        print("error: no test ran", file=sys.stderr)
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
