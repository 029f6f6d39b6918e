#!/usr/bin/env python3
"""Counts the test cases of JUnit/xUnit XML reports (lit's and pytest's).

Prints one line, `N passed, N failed, N skipped`, last, and exits non-zero when
anything failed or when no test ran at all. A report that is missing or cannot
be read (the run that writes it was killed or crashed) counts as one failure:
a suite that died must not leave a green line behind.
"""

import os
import sys
import xml.etree.ElementTree as ET


def main(paths):
    passed = failed = skipped = 0
    for path in paths:
        try:
            tree = ET.parse(path)
        except (OSError, ET.ParseError) as err:
            why = "missing" if not os.path.exists(path) else f"unreadable ({err})"
            print(f"error: {path} is {why}: the run that writes it did not "
                  "finish; counted as one failure", file=sys.stderr)
            failed += 1
            continue
        for case in tree.iter("testcase"):
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
