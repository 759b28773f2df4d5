"""The units every module counts in: GiB (what engines log) and GB, and whole-number division up."""

GIB = 1 << 30
GB = 10 ** 9


def ceil_div(a: int, b: int) -> int:
    """a / b rounded up, exactly, for ints (a block count, a share of bytes per GPU)."""
    return -(-a // b)
