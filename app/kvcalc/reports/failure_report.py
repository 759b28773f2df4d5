"""A failed start and its fixes, in the words the CLI prints and the JSON the page and
`--json` share (the same sentences: the page writes these)."""

from fractions import Fraction

from ..engines import title


def figures_json(failure) -> dict:
    return {name: float(value) if isinstance(value, Fraction) else value for name, value in failure.figures}


def failed_json(failed, fixes: list, contradiction: str | None = None) -> dict:
    """`failed_start` of the JSON answer (`contradiction`: the inputs sized here start, said)."""
    failure = failed.failure
    out = {"read": failed.read, "message": failed.message}
    if contradiction:
        out["contradiction"] = contradiction
    if failure is not None:
        out.update({"engine": failure.engine, "kind": failure.kind, "phase": failure.phase,
                    "line": failure.line_number, "printed": failure.printed, "figures": figures_json(failure)})
    return out


def fixes_json(fixes: list) -> list:
    return [fix.as_json() for fix in fixes]


def headline(failed) -> str:
    """One sentence: who will not start, why in its words and ours."""
    failure = failed.failure
    if failure is None or not failed.read:
        return failed.message[0].upper() + failed.message[1:] + "."
    who = title(failure.engine) if failure.engine else "The engine"
    where = f" (line {failure.line_number:,})" if failure.line_number else ""
    return f"{who} will not start: {failure.words}. It printed{where}: {failure.printed!r}"


def gives(fix) -> str:
    """What a fix gives and costs, with its figures (the page's and the CLI's same words)."""
    figures = []
    if fix.max_concurrency is not None:
        figures.append(f"{float(fix.max_concurrency):,.2f} requests at once")
    if fix.longest_context is not None:
        figures.append(f"contexts up to {fix.longest_context:,} tokens")
    return fix.words + (f" ({', '.join(figures)})" if figures else "")


def fix_lines(fixes: list) -> list[str]:
    """Each fix: its flags, what it gives and costs, its figures, and the command to copy."""
    if not fixes:
        return []
    lines = ["Fixes, cheapest for you first:"]
    for n, fix in enumerate(fixes, 1):
        lines.append(f"  {n}. {fix.flags}: {gives(fix)}")
        if fix.command:
            lines.append(f"     {fix.command}")
    return lines


NOTHING_SIZED = ("No fix can be sized from these lines alone: give the model and the GPU the server ran "
                 "(--model, --hf-config or --gguf, and --gpu) and the figures are sized again with the fixes")


NONE_STARTS = "None of the changes tried starts it with these inputs: see the verdict below"


def text(failed, fixes: list, contradiction: str | None = None, sized: bool = False) -> str:
    """The failure's sentence and its fixes (`sized`: the model was given, so an empty list is
    the sizing's answer, not a want of inputs)."""
    lines = [headline(failed)] + ([contradiction + "."] if contradiction else []) + fix_lines(fixes)
    if failed.read and not fixes:
        lines.append((NONE_STARTS if sized else NOTHING_SIZED) + ".")
    return "\n".join(lines) + "\n"
