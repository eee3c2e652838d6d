"""Name lookup over the GPU catalogue: device-name strings, aliases and canonical names to one `GpuSpec`.

Exercise it with `dlbench gpus show "NVIDIA H100 80GB HBM3"`. The catalogue file is read on the first call
and cached; importing this module reads nothing.

Matching ignores case, punctuation, word order and the vendor words torch and the datasheets add or drop
("NVIDIA", "GeForce", "Tesla", "Quadro", "AMD", "Instinct", "Radeon", "Generation", "Apple", and the "GPU (MPS)"
that `telemetry.environment` appends to an Apple chip's name), so "NVIDIA H100 80GB HBM3" and
"H100 80GB SXM5" (both aliases of "H100 SXM5 80GB") match, while "H100 PCIe" is a different GPU. Nothing is
matched by a prefix or a guess: a string that is not a known name gives None, and `close_matches` offers the
names it resembles.
"""

from __future__ import annotations

import csv
import re
import unicodedata
from functools import lru_cache
from importlib import resources

from dlbench.catalog.spec import CSV_COLUMNS, GpuSpec, spec_from_row

# Words that vendors and torch add or drop in device names; they never tell two GPUs apart. "gpu" and "mps" come
# from the name dlbench records for an Apple GPU ("Apple M2 Max GPU (MPS)", telemetry.environment).
_NOISE_WORDS = frozenset({"nvidia", "geforce", "tesla", "quadro", "amd", "instinct", "radeon", "generation",
                          "apple", "gpu", "mps"})

# Precision names (dlbench.measurement.config.PRECISIONS, plus fp8) → the GpuSpec field holding the peak.
_PEAK_FIELD = {
    "fp32": "fp32_flops_per_s",
    "tf32": "tf32_tensor_flops_per_s",
    "amp-fp16": "fp16_tensor_flops_per_s",
    "amp-bf16": "bf16_tensor_flops_per_s",
    "fp8": "fp8_tensor_flops_per_s",
}

# Two cards that report the same device name are told apart by memory only when it differs by this much.
_MEMORY_TOLERANCE = 0.15


def normalize(name: str) -> str:
    """A matching key: lower case, vendor words dropped, "80 GB"/"80G" as "80gb", words sorted."""
    text = unicodedata.normalize("NFKC", name).lower()  # full-width "ＲＴＸ ４０９０" reads as "rtx 4090"
    text = re.sub(r"[-_/(),.:]+", " ", text)
    text = re.sub(r"\b(\d+)\s*g(?:b|ib)?\b", r"\1gb", text)
    words = sorted({word for word in text.split() if word not in _NOISE_WORDS})
    return " ".join(words)


def compact(name: str) -> str:
    """A looser key for `close_matches` only: "RTX4090" and "rtx 4090" both give "rtx4090" (words kept in order).

    Lookup itself does not use it (words must be separated: "rtx4090" is not taken as a name), but a user who
    typed it is offered "RTX 4090".
    """
    text = re.sub(r"[^0-9a-z]+", " ", unicodedata.normalize("NFKC", name).lower())
    return "".join(word for word in text.split() if word not in _NOISE_WORDS)


def _read_catalogue() -> list[GpuSpec]:
    path = resources.files("dlbench.catalog").joinpath("gpus.csv")
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        if tuple(reader.fieldnames or ()) != CSV_COLUMNS:
            raise RuntimeError(f"gpus.csv columns are {reader.fieldnames}, expected {list(CSV_COLUMNS)}")
        return [spec_from_row(row) for row in reader]


@lru_cache(maxsize=1)
def _catalogue() -> tuple[tuple[GpuSpec, ...], dict[str, GpuSpec], dict[str, tuple[str, ...]]]:
    """(specs, by canonical name, normalised key → canonical names), built once."""
    specs = tuple(_read_catalogue())
    by_name = {spec.name: spec for spec in specs}
    return specs, by_name, _index(specs, normalize)


def _index(specs: tuple[GpuSpec, ...], key) -> dict[str, tuple[str, ...]]:
    """`key(label)` → canonical names, over every name and alias."""
    index: dict[str, list[str]] = {}
    for spec in specs:
        for label in (spec.name, *spec.aliases):
            names = index.setdefault(key(label), [])
            if spec.name not in names:
                names.append(spec.name)
    return {k: tuple(names) for k, names in index.items()}


def all_gpus() -> list[GpuSpec]:
    """Every GPU in the catalogue, in file order (by vendor, then roughly by generation)."""
    return list(_catalogue()[0])


def candidates(device_name: str) -> list[GpuSpec]:
    """Every GPU whose name or alias matches `device_name` (several when cards share a device name)."""
    _, by_name, index = _catalogue()
    return [by_name[name] for name in index.get(normalize(device_name), ())]


def lookup(device_name: str, memory_bytes: int | None = None) -> GpuSpec | None:
    """The catalogue row for a canonical name, an alias or a `torch.cuda.get_device_name()` string.

    Some cards report the same device name (the RTX 4060 Ti 8 GB and 16 GB); pass the device's total
    memory (`torch.cuda.get_device_properties(i).total_memory`) to tell them apart. Returns None when the
    name is unknown or still ambiguous.
    """
    if not device_name or not device_name.strip():
        return None
    found = candidates(device_name)
    if len(found) == 1:
        return found[0]
    if len(found) > 1 and memory_bytes:
        close = [
            spec for spec in found
            if spec.memory_bytes and abs(spec.memory_bytes - memory_bytes) <= _MEMORY_TOLERANCE * spec.memory_bytes
        ]
        if len(close) == 1:
            return close[0]
    return None


def resolve(name: str) -> GpuSpec:
    """The catalogue row for a GPU name a user typed, else `BadInput` saying why, with the names it resembles.

    Every command that takes a GPU name (`gpus show`, `estimate`, `cost`, `reference list --gpu`) resolves it
    here, so an unknown or ambiguous name gets the same message (and exit code 2) everywhere.
    """
    from dlbench.errors import BadInput

    spec = lookup(name)
    if spec is not None:
        return spec
    several = candidates(name)
    if len(several) > 1:
        raise BadInput(f"{name!r} matches several GPUs: {', '.join(s.name for s in several)}; name one of them")
    matches = close_matches(name)
    hint = f"close matches: {', '.join(matches)}" if matches else "`dlbench gpus` lists every GPU"
    raise BadInput(f"unknown GPU {name!r}; {hint}")


def canonical_name(device_name: str, memory_bytes: int | None = None) -> str | None:
    """The catalogue's canonical name for `device_name`, or None (see `lookup`)."""
    spec = lookup(device_name, memory_bytes)
    return spec.name if spec else None


# How alike (difflib's ratio) a typed name and a model name must be to be offered: "rtx 4900" ~ "rtx4090" (0.86),
# "a1000" ~ "a100" (0.89) and "h100" ~ "h200" (0.75) are; "a1000" ~ "mi100" (0.6) is not.
_CLOSE_CUTOFF = 0.75
_MEMORY_WORD = re.compile(r"^\d+gb$")


def _fold(key: str) -> str:
    """The letter O where the digit 0 was meant ("H1OO", "MI3OOX"): every "o" reads as "0". Applied to both
    sides of a comparison, so a real "o" ("pro") still matches itself."""
    return key.replace("o", "0")


@lru_cache(maxsize=1)
def _match_keys() -> dict[str, tuple[frozenset[str], tuple[frozenset[str], ...], frozenset[str]]]:
    """Per canonical name: (compact keys, word sets, model-number keys) over its name and aliases, O/0 folded.
    Model-number keys are the words with a digit that are not a memory size ("a100", "4090", "mi300x")."""
    out = {}
    for spec in _catalogue()[0]:
        labels = (spec.name, *spec.aliases)
        compacts = frozenset(_fold(compact(label)) for label in labels)
        word_sets = tuple(frozenset(_fold(w) for w in normalize(label).split()) for label in labels)
        models = frozenset(w for words in word_sets for w in words
                           if any(c.isdigit() for c in w) and not _MEMORY_WORD.match(w))
        out[spec.name] = (compacts, word_sets, compacts | models)
    return out


def close_matches(device_name: str, limit: int = 5) -> list[str]:
    """Canonical names that `device_name` resembles, best first (for "did you mean" messages).

    Case, spacing, dashes, vendor words and the letter O typed for a zero are forgiven. A name equal to the
    query but for those ("RTX4090", "B2OO") is the only suggestion; otherwise GPUs with every word of the query
    come first (so "H100" lists every H100), then names difflib finds close to the query or to its model number
    ("a1000" → the A100s), most alike first; among equally alike names, swapped characters ("4900" → "4090")
    and then a longer common start ("h100" → "h200" before "v100") rank higher.
    """
    import os.path
    from difflib import SequenceMatcher

    def alike_score(q: str, key: str) -> tuple[float, bool, int]:
        return (round(SequenceMatcher(None, q, key).ratio(), 3), sorted(q) == sorted(key),
                len(os.path.commonprefix([q, key])))

    query = normalize(device_name)
    if not query:
        return []
    q_compact = _fold(compact(device_name))
    q_words = frozenset(_fold(w) for w in query.split())
    q_keys = {q_compact, *(w for w in q_words if any(c.isdigit() for c in w) and not _MEMORY_WORD.match(w))}
    same: list[str] = []
    containing: list[str] = []
    alike: dict[str, tuple[float, bool, int]] = {}
    for name, (compacts, word_sets, fuzzy_keys) in _match_keys().items():
        if q_compact in compacts:
            same.append(name)
        elif any(q_words <= words for words in word_sets):
            containing.append(name)
        else:
            best = max(alike_score(q, key) for q in q_keys for key in fuzzy_keys)
            if best[0] >= _CLOSE_CUTOFF:
                alike[name] = best
    if same:
        return same[:limit]
    ranked = sorted(alike, key=lambda n: alike[n], reverse=True)  # stable: ties stay in catalogue order
    return (containing + ranked)[:limit]


def peak_flops_per_s(spec: GpuSpec | str, precision: str) -> float | None:
    """Dense peak FLOP/s of `spec` for a dlbench precision, or None when no source gives it.

    fp32 → non-tensor FP32; tf32 → TF32 tensor; amp-fp16 / amp-bf16 → FP16 / BF16 tensor with FP32
    accumulation (already the half rate on GeForce cards); fp8 → FP8 tensor. A GPU without the format (TF32
    on a V100, BF16 on a T4) gives None. `spec` may be a name, looked up with `lookup`.
    """
    from dlbench.errors import BadInput

    field = _PEAK_FIELD.get(precision)
    if field is None:
        raise BadInput(f"unknown precision {precision!r}; expected one of: {', '.join(_PEAK_FIELD)}")
    if isinstance(spec, str):
        found = lookup(spec)
        if found is None:
            return None
        spec = found
    return getattr(spec, field)
