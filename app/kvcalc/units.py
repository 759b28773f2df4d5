"""The units every module counts in: GiB (what engines log) and GB, whole-number division up, and the
bisection every boundary search ends in."""

GIB = 1 << 30
MIB = 1 << 20
GB = 10 ** 9


def ceil_div(a: int, b: int) -> int:
    """a / b rounded up, exactly, for ints (a block count, a share of bytes per GPU)."""
    return -(-a // b)


def last_holding(holds, lo: int, hi: int) -> int:
    """The largest n in [lo, hi) with holds(n), for a monotone holds with holds(lo) true and
    holds(hi) false, by bisection: every search for a boundary (the longest context, the
    compute-bound batch) ends in it."""
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if holds(mid):
            lo = mid
        else:
            hi = mid
    return lo
