"""SGLang's own parallel words on the page (issue 34, item 5): a link with `engine=sglang&tp=8&dp=8`
(SGLang's --tp 8 --dp 8 --enable-dp-attention) is 8 GPUs, as the CLI reads it, not 64."""

import json

from pagekit import metrics, open_page
from support import cli

LINK = "#model=deepseek-ai/DeepSeek-V3&gpu=h200-141gb&engine=sglang&tp=8&dp=8&context=8192"


def test_an_sglang_link_with_tp_8_dp_8_is_eight_gpus(page, site):
    open_page(page, site + LINK)
    assert page.input_value("#gpus") == "8"
    code, out, err = cli("--model", "deepseek-ai/DeepSeek-V3", "--gpu", "h200-141gb", "--engine", "sglang", "--tp", "8",
                         "--dp", "8", "--context", "8192", "--json")
    assert code == 0, err
    expected, shown = json.loads(out), metrics(page)
    # SGLang's tp 8 over all 8 GPUs, its attention data-parallel over 8 ranks of attention tp 8 / 8.
    assert (expected["gpus"], expected["tp"], expected["dp"], expected["attention_tp"]) == (8, 8, 8, 1)
    for key in ("max_concurrency", "engine_kv_tokens", "weights_bytes_per_gpu"):
        assert shown[key] == str(expected[key]), key
