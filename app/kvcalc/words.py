"""Numbers in words for people: sizes in GiB or GB, rates, and plurals (report, time_report and
verdict all write with these)."""

from .units import GB, GIB


def size(n: int | None, unit: str = "gib") -> str:
    """A byte count in the chosen unit, two decimals, unit named."""
    if n is None:
        return "n/a"
    scales = ((10 ** 18, "EB"), (10 ** 15, "PB"), (10 ** 12, "TB"), (GB, "GB"), (10 ** 6, "MB"), (10 ** 3, "KB")) \
        if unit == "gb" else ((1 << 60, "EiB"), (1 << 50, "PiB"), (1 << 40, "TiB"), (GIB, "GiB"), (1 << 20, "MiB"),
                              (1 << 10, "KiB"))
    for scale, name in scales:
        if abs(n) >= scale:
            return f"{n / scale:,.2f} {name}"
    return f"{n:,} B"


def plural(n: int, word: str) -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "s")


def listed(items: list[str]) -> str:
    """Items in a sentence: "a", "a and b", "a, b and c"."""
    return ", ".join(items[:-1]) + " and " + items[-1] if len(items) > 1 else "".join(items)


def rate(value: float) -> str:
    """A rate readable at any size: grouped digits, or three significant ones below 10."""
    return f"{value:,.1f}" if value >= 10 else f"{value:.3g}"


def both(n: int | None) -> str:
    return "n/a" if n is None else f"{n:,} B ({size(n, 'gib')} = {size(n, 'gb')})"


def bytes_each(precision) -> str:
    """What one element of a precision costs, as the arithmetic writes it: "2 B" or "4.5 bits / 8"."""
    b = precision.bits_per_element
    if b % 8 == 0:
        return f"{int(b // 8)} B"
    return f"{float(b):g} bits / 8"
