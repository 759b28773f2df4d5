"""Several models on these GPUs: the servers the `also` field names beside this one, each sized on
its own and then together as its engine shares memory (kvcalc.reports.colocation), written as a
table, the joint verdict and one launch command per server. Loaded when its fold first opens.
What the engine refuses (shares past 1, a server that does not start) is said in the section's
status line, naming the server, and the last table stays."""

from kvcalc.errors import InputError
from kvcalc.inputs.options import server_sets
from kvcalc.reports.colocation import colocate, kv_bytes, requests_held
from kvcalc.reports.verdict import verdict
from kvcalc.words import size

from web import state
from web.dom import lines_of, put, view
from web.errors import cli_words, label

EMPTY = ("Name the other servers above (model:…, memory-utilization:…; one set per server, separated by ;) to size "
         "them beside this one.")


def render(values: dict, unit: str) -> None:
    """The servers of `values` (the single view's inputs, `also` among them) into the section."""
    text = values.get("also")
    if not text:
        put("#together", "idle", "state")
        put("#together-status", EMPTY)
        return
    try:
        found = colocate({k: v for k, v in values.items() if k != "also"}, server_sets(text))
    except InputError as e:
        put("#together", "refused", "state")
        # The keys a server may set are named as typed in the field, not as the form's labels.
        put("#together-status", f"Not sized: {label(e.field)}: {cli_words(e.message)}")
        return
    view("#together-table tbody").show([_row(server, unit) for server in found.servers])
    together = found.together
    put("#together", "done" if together.fits else "short", "state")
    put("#together-status", together.words)
    put("#together-commands", "\n".join(server.command or f"# server {server.number}: "
                                        + (server.command_notes[0] if server.command_notes else "no command")
                                        for server in found.servers))
    view("#together-notes", item_tag="li").show(lines_of(together.notes))


def _row(server, unit: str) -> tuple:
    evaluation = server.evaluation
    scenario = evaluation.scenario
    work = scenario.workload
    holds = requests_held(server)
    held = "n/a" if holds is None else f"{holds:,} ({work.batch:,} asked)"
    share = "what it needs" if server.share is None else f"{float(server.share):g} of the memory"
    return ("" if holds is None or holds >= work.batch else "short", [
        (f"Server {server.number}: {scenario.model.name}", None, ""),
        (f"{share}, port {server.port}" if server.port else share, None, ""),
        (verdict(scenario, evaluation, unit).sentence, None, ""),
        (size(kv_bytes(server), unit), None, "num"),
        (held, None, "num"),
        (size(server.held_bytes, unit), None, "num"),
    ])


def draw() -> None:
    """The fold's drawing for the inputs on screen (web.folds)."""
    if state.evaluation is not None:
        render(state.evaluation.values, state.unit)
