"""The plan's last phase: its rows in order (fitting first, then fewer GPUs, cheaper, more
requests held) and the notes on what it assumed or left out.
"""

from dataclasses import dataclass

from ..readers import gpu_presets
from .ask import Ask
from .rows import Row, as_decimal


@dataclass(frozen=True)
class Plan:
    rows: tuple[Row, ...]
    notes: tuple[str, ...]
    everything: bool                          # every deployment, not only the smallest per GPU type

    @property
    def best(self) -> Row | None:
        return next((row for row in self.rows if row.fits), None)


def finish(ask: Ask, rows: list, everything: bool = False) -> Plan:
    """The plan of these rows: in order (_order), with its notes."""
    return Plan(tuple(sorted(rows, key=_order(ask))), _notes(ask), everything)


def _notes(ask: Ask) -> tuple[str, ...]:
    """What the plan assumed or left out: no prices, Little's law at a rate, the inputs of one
    deployment dropped, prices for GPUs it does not consider."""
    notes = []
    if not ask.prices:
        notes.append("no prices given: add what you pay per GPU-hour (prices, or --price GPU=USD) for $/hour and "
                     "$/million tokens")
    if ask.rate is not None:
        notes.append(f"concurrency from Little's law at {as_decimal(ask.rate)} requests/s and {ask.output_tokens:,} output "
                     "tokens each: a lower bound, from the time bounds (queueing and scheduling only add)")
    if ask.dropped:
        notes.append(f"left out, as they belong to one deployment: {', '.join(ask.dropped)}")
    unused = [gpu_id for gpu_id in ask.prices if gpu_id not in ask.gpus]
    if unused:
        notes.append(f"prices for GPUs the plan does not consider: {', '.join(unused)}")
    # A whole GPU's price never prices its MIG instances (a family's name covers whole GPUs only).
    unpriced = [gpu_id for gpu_id in ask.gpus if gpu_id not in ask.prices
                and gpu_presets.gpu(gpu_id).mig_of in ask.prices]
    if unpriced:
        notes.append(f"unpriced MIG instances: {', '.join(unpriced)} (a whole GPU's price does not price its "
                     "instances; give each its own, e.g. \"H100 3g.40gb=1.20\")")
    return tuple(notes)


def _order(ask: Ask):
    """Fitting rows first; then fewer GPUs, then cheaper (priced before unpriced), then more
    requests held; then the GPU types and precisions in the order asked, fewer stages, wider tp."""
    rank = {gpu_id: i for i, gpu_id in enumerate(ask.gpus)}

    def key(row: Row):
        price = row.usd_per_hour
        return (not row.fits, row.gpus, price is None, price or 0, -(row.max_concurrency or 0), rank.get(row.gpu, 0),
                _index(ask.weights_dtypes, row.weights_dtype), _index(ask.kv_dtypes, row.kv_dtype),
                row.layout.pp, -row.layout.tp, row.layout.dp, row.layout.ep)
    return key


def _index(names: tuple, name) -> int:
    return names.index(name) if name in names else 0
