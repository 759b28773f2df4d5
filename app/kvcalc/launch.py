"""Launch commands for the serving engines, for the configuration on screen: each engine module
writes its own (engines/vllm.py, sglang.py, llama.cpp's) from the pieces in command_line.py."""

from .command_line import Launch
from .engines import REGISTRY

__all__ = ["Launch", "launch"]


def launch(scenario, engine: str, result=None) -> Launch:
    """The command for `engine`; with the result, the server may run as many requests as fit."""
    return REGISTRY[engine].launch(scenario, result)
