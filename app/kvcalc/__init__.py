"""KVCacheCalc: exact KV-cache and serving-capacity sizing, pure standard library.

The same engine runs in the browser (Pyodide), on the command line (`kvcalc`) and in tests.
"""

from .errors import InputError
from .evaluation import Evaluation, evaluate
from .readers.hfconfig import model_from_config, parse_config_text
from .layers import (
    ChunkedLocalAttention, FullAttention, MLAAttention, NoCache, SlidingWindowAttention, StateSpaceLayer)
from .model import Model
from .inputs.options import OPTIONS
from .precision import PRECISIONS, precision
from .sizing import Deployment, Result, Workload, compute

__version__ = "0.1.0"

__all__ = ["InputError", "model_from_config", "parse_config_text", "ChunkedLocalAttention",
           "FullAttention", "MLAAttention", "NoCache", "SlidingWindowAttention", "StateSpaceLayer",
           "Model", "OPTIONS", "Evaluation", "evaluate", "PRECISIONS", "precision", "Deployment",
           "Result", "Workload", "compute"]
