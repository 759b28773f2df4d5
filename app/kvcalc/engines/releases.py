"""Engine releases: a version as the engine prints it, read into the release whose rules apply.

vLLM and SGLang print PEP 440 versions (`0.10.2`, `v0.19.1`, `0.28.1rc1.dev50+g1a2b3c`,
`0.4.6.post1`); llama.cpp prints its build number (`b5192`, or `version: 5192 (...)`). A
pre-release or development build of X.Y.Z runs the code before X.Y.Z is released, so it takes the
rules of the newest release before it; a post release takes its release's rules.

Each engine module lists the releases it models (FIRST and NEWEST, the range read from its
sources) and keys every rule that changed to the release that changed it, with `at_least`.
"""

import re
from dataclasses import dataclass, field

from ..errors import InputError

# PEP 440 as engines print it: an optional v, release numbers, an optional pre-release, post and
# dev part, and a local part after "+" (a git hash) that no rule reads.
_PEP440 = re.compile(r"v?(?P<release>[0-9]{1,4}(?:\.[0-9]{1,4}){0,3})"
                     r"(?:[.-]?(?P<pre>a|b|rc|alpha|beta|c)[.-]?[0-9]{0,6})?"
                     r"(?:[.-]?post[.-]?(?P<post>[0-9]{1,6}))?"
                     r"(?:[.-]?(?P<dev>dev)[.-]?[0-9]{0,9})?"
                     r"(?:\+[a-z0-9.]{1,80})?", re.IGNORECASE)
# llama.cpp: "b5192", or "5192" as `llama-cli --version` prints "version: 5192 (4d3b6b2a)".
_BUILD = re.compile(r"(?:b|build\s*|version:?\s*)?(?P<build>[0-9]{3,6})(?:\s*\([0-9a-f]{6,40}\))?", re.IGNORECASE)


@dataclass(frozen=True, order=True)
class Release:
    """A version, ordered: `key` is the release numbers and a stage (-1 before the release
    for a pre-release or dev build, 0 the release, 2N its postN and 2N - 1 a dev build of it)."""
    key: tuple
    text: str = field(default="", compare=False)
    # vLLM 0.8-0.10 ran the V0 engine with VLLM_USE_V1=0 (or as a fallback): "v0", "v1" or None for
    # the release's default.
    variant: str | None = field(default=None, compare=False)

    def at_least(self, *release: int, post: int = 0) -> bool:
        """Whether this version has the rule first released in `release` (e.g. 0, 20, 0; with
        post=1 for a rule first in X.Y.Z.post1)."""
        # Asked tens of thousands of times an update (every rule of every engine run): the
        # answers are kept, keyed by the exact question.
        question = (self.key, release, post)
        known = _AT_LEAST.get(question)
        if known is None:
            known = _AT_LEAST[question] = self.key >= _padded(release) + (2 * post,)
        return known

    def __str__(self) -> str:
        return self.text


_AT_LEAST = {}


def _padded(numbers) -> tuple:
    return tuple(numbers) + (0,) * (4 - len(numbers))


def pep440(text: str) -> Release | None:
    match = _PEP440.fullmatch(text.strip())
    if not match:
        return None
    numbers = tuple(int(n) for n in match["release"].split("."))
    # Stages in PEP 440 order: a pre-release or dev build of X.Y.Z (-1), X.Y.Z (0), a dev build of
    # X.Y.Z.postN (2N - 1), X.Y.Z.postN (2N).
    post = int(match["post"] or 0)
    if match["post"] is not None:
        stage = 2 * post - 1 if match["dev"] else 2 * post
    else:
        stage = -1 if (match["pre"] or match["dev"]) else 0
    return Release(_padded(numbers) + (stage,), text.strip())


def build_number(text: str) -> Release | None:
    match = _BUILD.fullmatch(text.strip())
    if not match:
        return None
    return Release((int(match["build"]), 0, 0, 0, 0), text.strip())


def release(text: str) -> Release:
    """A modelled release named in a rule (never user input): "0.20.0" or "b5192"."""
    found = build_number(text) if text.startswith("b") else pep440(text)
    assert found is not None, text
    return found


def parse(engine_module, text) -> Release:
    """The release a version names, or the error a user reads: what was wrong and which releases
    are modelled."""
    title = engine_module.TITLE
    first, newest = engine_module.FIRST_RELEASE, engine_module.NEWEST_RELEASE
    allowed = f"{title} releases modelled: {first} to {newest}"
    raw = str(text).strip()
    if not raw or len(raw) > 100:
        raise InputError("engine-version", f"expected a {title} version as it prints it, e.g. "
                                           f"{engine_module.VERSION_EXAMPLE}; {allowed}")
    found = engine_module.parse_version(raw)
    if found is None:
        raise InputError("engine-version", f"{raw[:40]!r} is not a {title} version (e.g. "
                                           f"{engine_module.VERSION_EXAMPLE}); {allowed}")
    if found < release(first):
        raise InputError("engine-version", f"{raw[:40]} is older than modelled; {allowed}")
    top = release(newest)
    # Post releases of the newest take its rules; a later patch may change one (0.10.2 and 0.20.1
    # did), so it is refused until it is read.
    if (found > top) if engine_module.VERSIONS_BY_BUILD else (found.key[:4] > top.key[:4]):
        raise InputError("engine-version", f"{raw[:40]} is newer than modelled; {allowed}")
    return found


def newest(engine_module) -> Release:
    return release(engine_module.NEWEST_RELEASE)


def in_force(engine_module, settings) -> Release:
    """The release an engine's rules are read for: the one given when that engine is the one
    sized as, else its newest modelled (a launch command for another engine, or the exact ideal)."""
    if settings.release is not None and settings.engine == engine_module.NAME:
        return settings.release
    return newest(engine_module)
