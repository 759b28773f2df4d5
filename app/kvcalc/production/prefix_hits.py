"""Prefix caching with a hit rate (issue 26, part 5). Interface: hit_rate_from, expected."""


def hit_rate_from(values: dict):
    return values.get("prefix-hit-rate")
