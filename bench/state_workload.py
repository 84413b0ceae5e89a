"""bench/state.py's workload: sentences of pseudo-words whose ranks follow a Zipf distribution,
and the distinct words each batch of them touches."""

from __future__ import annotations

import itertools
import random


def make_vocabulary(size: int, seed: int = 11) -> list[str]:
    """``size`` distinct lowercase pseudo-words of 2-4 syllables (4-12 letters)."""
    rng = random.Random(seed)
    onsets = ["b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "z",
              "br", "ch", "cl", "dr", "fl", "gr", "pl", "sh", "st", "th", "tr"]
    vowels = ["a", "e", "i", "o", "u", "ai", "ea", "ou"]
    words: list[str] = []
    seen: set[str] = set()
    while len(words) < size:
        word = "".join(rng.choice(onsets) + rng.choice(vowels) for _ in range(rng.choice((2, 2, 3, 4))))
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


def make_sentences(count: int, vocabulary: list[str], zipf: float, seed: int = 7) -> list[str]:
    """``count`` sentences of 4-20 words; word of rank r drawn with probability ~ 1 / r**zipf."""
    rng = random.Random(seed)
    weights = list(itertools.accumulate(1 / (rank ** zipf) for rank in range(1, len(vocabulary) + 1)))
    lengths = [rng.randint(4, 20) for _ in range(count)]
    words = rng.choices(vocabulary, cum_weights=weights, k=sum(lengths))
    sentences = []
    at = 0
    for length in lengths:
        sentences.append(" ".join(words[at:at + length]))
        at += length
    return sentences


def batch_keys(sentences: list[str], batch: int) -> list[int]:
    """Distinct words of each batch: fill_topic's round-robin puts sentence i at offset i // 4
    of partition i % 4, so a batch taking the same count from each partition is a slice."""
    return [len({w for s in sentences[at:at + batch] for w in s.split()})
            for at in range(0, len(sentences), batch)]
