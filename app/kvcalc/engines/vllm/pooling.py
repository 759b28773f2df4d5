"""vLLM's pooling runner (embedding, classification / reranking and reward models): which models
run it, and what it changes in the memory vLLM leaves for the KV cache.

Which runner (ModelConfig._get_runner_type / _get_default_runner_type, vllm/config/__init__.py of
0.10.2, vllm/config/model.py of 0.12.0 and 0.33.0, alike in the three): `--runner pooling` (from 0.10.2;
`--task embed|classify|score|reward` before it, mapped onto the runner by 0.12.0's deprecation shim) or,
with `--runner auto`, the first of
1. a Sentence Transformers repo (get_pooling_config finds a modules.json with a Pooling module):
   pooling, whatever the architecture says; Qwen3-Embedding's config names Qwen3ForCausalLM. This
   lives beside config.json, so a config cannot tell it: the `vllm-runner` input (what `--runner`
   says), or a log that prints `pooler_config=PoolerConfig(...)` / "Resolved `--runner auto` to
   `--runner pooling`", gives it;
2. an architecture the model registry implements (model_executor/models/registry.py): pooling where
   its class is a pooling model (BertModel, RobertaForMaskedLM, GritLM, *ForRewardModel, ...),
   generate where it is a generative one (ChatGLMModel, AquilaModel, BartModel and the audio / omni
   *Model wrappers, which end like a pooling suffix);
3. the suffix table _SUFFIX_TO_DEFAULTS: *ForCausalLM, *ForConditionalGeneration, *ChatModel,
   *LMHeadModel generate; *ForTextEncoding, *EmbeddingModel, *ForSequenceClassification,
   *For{Token,Audio,Image,Video}Classification, *ClassificationModel, *ForRewardModeling,
   *RewardModel and any other *Model pool.

What the pooling runner changes:
- The profiling run (v1/worker/gpu_model_runner.py profile_run) calls _dummy_pooler_run instead of
  _dummy_sampler_run: no logits over the vocabulary; the pooler's largest task (token_embed: every
  token's hidden state in the fp32 head dtype, then normalized) over the batch's tokens
  (profile.sampler_peak prices it). The V2 runner (0.33.0 vllm/v1/worker/gpu/model_runner.py) builds
  no sampler for a pooling model (`if self.is_last_pp_rank and not self.is_pooling_model`), so none of
  its per-request penalty buffers either.
- The weights: a generative architecture converted to pooling (--convert embed/classify/reward,
  model_executor/models/adapters.py _create_pooling_model_cls, 0.10.2 / 0.12.0 / 0.33.0) deletes its
  lm_head and logits_processor after building and never loads `lm_head.*`; a native pooling class has
  none. So an untied output head is not in "Model loading took" (a tied one is the input embedding,
  which stays).
"""

from ...units import ceil_div

# Suffixes in vLLM's order (vllm/config/model.py _SUFFIX_TO_DEFAULTS, 0.12.0 and 0.33.0): the first
# that ends the architecture's name decides.
GENERATE_SUFFIXES = ("ForCausalLM", "ForConditionalGeneration", "ChatModel", "LMHeadModel")
POOLING_SUFFIXES = ("ForTextEncoding", "EmbeddingModel", "ForSequenceClassification", "ForTokenClassification",
                    "ForAudioClassification", "ForImageClassification", "ForVideoClassification",
                    "ClassificationModel", "ForRewardModeling", "RewardModel", "Model")
# Registered generative architectures whose names end like a pooling suffix (registry.py
# _TEXT_GENERATION_MODELS / _MULTIMODAL_MODELS of 0.10.2, 0.12.0, 0.33.0): the registry answers first.
GENERATIVE_MODELS = frozenset({"AquilaModel", "ChatGLMModel", "BartModel", "MiDashengLMModel", "Qwen2_5OmniModel",
                               "UltravoxModel", "MossAudioModel", "TransformersModel"})
# Registered pooling classes whose names match no pooling suffix (registry.py _EMBEDDING_MODELS,
# _CROSS_ENCODER_MODELS).
POOLING_MODELS = frozenset({"GritLM", "RobertaForMaskedLM", "BertForMaskedLM", "JinaVLForRanking",
                            "ColPaliForRetrieval", "Terratorch", "PrithviGeoSpatialMAE"})
RUNNERS = ("auto", "generate", "pooling")


def architecture_runner(architecture: str | None) -> str:
    """The runner `--runner auto` resolves an architecture to, when the repo is no Sentence
    Transformers one: "pooling" or "generate"."""
    name = architecture or ""
    if name in GENERATIVE_MODELS:
        return "generate"
    if name in POOLING_MODELS:
        return "pooling"
    for suffix in GENERATE_SUFFIXES + POOLING_SUFFIXES:
        if name.endswith(suffix):
            return "generate" if suffix in GENERATE_SUFFIXES else "pooling"
    return "generate"


def runner(model, settings=None) -> str:
    """The runner vLLM starts this model with: the `vllm-runner` input where it names one (what
    `--runner` says, or a log's pooler_config), else what the architecture resolves to."""
    given = getattr(settings, "vllm_runner", None) if settings is not None else None
    if given in ("generate", "pooling"):
        return given
    return architecture_runner(model.architecture)


def is_pooling(model, settings=None) -> bool:
    return runner(model, settings) == "pooling"


def head_bytes(model) -> int | None:
    """The untied output head's bytes as the checkpoint stores them (0 where it has none, or it is
    tied), None where the model's tensors are not known by name."""
    shapes = model.shapes
    if shapes is None or shapes.tensors_unread is not None or not shapes.tensors:
        return None
    total = 0
    for i, tensor in enumerate(shapes.tensors):
        if tensor.role != "head":
            continue
        if shapes.tensor_bytes is not None:
            total += shapes.tensor_bytes[i]
        elif model.weights_dtype in ("bf16", "fp16", "fp32"):
            total += tensor.elements * (4 if model.weights_dtype == "fp32" else 2)
        else:
            return None
    return total


def loaded_weights(scenario, weights: int | None) -> tuple[int | None, str]:
    """(the weights per GPU vLLM loads, the note) for the model's weights per GPU: under the pooling
    runner without the untied lm_head, which a tensor-parallel ParallelLMHead splits over tp (and the
    stages share evenly, as the weights are split here)."""
    model, dep = scenario.model, scenario.deployment
    if weights is None or not is_pooling(model, scenario.settings):
        return weights, ""
    head = head_bytes(model)
    if head is None:
        return weights, ("vLLM's pooling runner loads no lm_head; this model's tensors are not known by name, so "
                         "its weights are kept whole (an untied head, if it has one, is counted)")
    if not head:
        return weights, ""
    share = ceil_div(head, dep.tp * dep.pp)
    return weights - share, (f"vLLM's pooling runner loads no lm_head (adapters.py deletes it): {share:,} B per GPU "
                             "less than the checkpoint")
