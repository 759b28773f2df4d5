"""Launch commands for the serving engines, for the configuration on screen: each engine module
writes its own (engines/<engine>/engine.py) from the pieces in command_line.py."""

from dataclasses import replace

from . import launch_env, launch_flags
from ..command_line import Launch, shell_join
from ..engines import REGISTRY

__all__ = ["Launch", "launch"]


def launch(scenario, engine: str, result=None) -> Launch:
    """The command for `engine`; with the result, the server may run as many requests as fit.
    What runs beside the model (a draft, LoRA slots, an offload tier) adds its own flags."""
    out = REGISTRY[engine].launch(scenario, result)
    flags, env = launch_flags(scenario, engine), launch_env(scenario, engine)
    if out.command is None or not (flags or env):
        return out
    command = out.command + "".join(" " + shell_join([flag]) for flag in flags)
    return replace(out, command=shell_join(f"{k}={v}" for k, v in env.items()) + " " * bool(env) + command)
