"""Tests of trace_regions.py's parsing and sums (no trace needed)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import trace_regions  # noqa: E402

MS = 1000000  # nanoseconds


def _event(g, kind, ms, typ):
    return f'M=1 P=0 G={g} Region{kind} Time={ms * MS} Task=0 Type="{typ}"'


LINES = [
    _event(1, "Begin", 1000, "a: outer"),
    _event(2, "Begin", 1500, "b: work"),
    _event(3, "Begin", 1600, "b: work"),
    _event(2, "End", 2500, "b: work"),
    _event(3, "End", 3000, "b: work"),
    _event(2, "Begin", 5000, "b: work"),
    _event(2, "End", 6000, "b: work"),
    _event(1, "End", 7000, "a: outer"),
    _event(4, "Begin", 7500, 'c: \\"quoted\\" left open'),
    f"M=1 P=0 G=4 GoBlock Time={9000 * MS} Reason=x",
]


class TraceRegionsTest(unittest.TestCase):
    def test_parse(self):
        regions, t0, t1 = trace_regions.parse(LINES)
        self.assertEqual((t0, t1), (1000 * MS, 9000 * MS))
        self.assertEqual(sorted(regions["b: work"]), [(1500 * MS, 2500 * MS), (1600 * MS, 3000 * MS), (5000 * MS, 6000 * MS)])
        self.assertEqual(regions["a: outer"], [(1000 * MS, 7000 * MS)])
        # A region open at the end runs to the last event.
        self.assertEqual(regions['c: \\"quoted\\" left open'], [(7500 * MS, 9000 * MS)])

    def test_union(self):
        self.assertEqual(trace_regions.union([(5, 6), (1, 3), (2, 4), (4, 4)]), [[1, 4], [5, 6]])

    def test_table_sums(self):
        regions, t0, t1 = trace_regions.parse(LINES)
        row = [r for r in trace_regions.table(regions, t0, t1).splitlines() if r.startswith("b: work")][0]
        count, total, wall, first, last = row.split()[-5:]
        self.assertEqual(int(count), 3)
        self.assertEqual(total, "3.400")  # 1.0 + 1.4 + 1.0 s
        self.assertEqual(wall, "2.500")   # [1.5, 3.0] and [5.0, 6.0]
        self.assertEqual((first, last), ("0.500", "5.000"))  # from the first event, at 1 s


if __name__ == "__main__":
    unittest.main()
