"""A host-memory KV tier (issue 26, part 2). Interface: offload_from, tier."""


def offload_from(values: dict):
    return None
