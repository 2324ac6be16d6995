"""The relevance gate: when a candidate is relevant enough to return, calibrated per embedder
(a cosine + keyword-coverage gate, or a probability that a cross-encoder's judgement joins), and
the plain cosine floor `min_similarity` that replaces it."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import connection

from ..embedding.embedders import get_embedder
from . import asking, bm25, entities, rerank, synonyms
from .asking import asks_about_a_choice
from .candidates import Candidate


@dataclass(frozen=True)
class Gate:
    """When a candidate is relevant enough to return, calibrated per embedder (cosine scales differ).

    A hit clears the gate when its cosine alone reaches `cosine`, or when cosine + `weight` × coverage
    reaches `combined` — coverage being the idf-weighted share of the question's telling words the
    memory holds (bm25.search_with_coverage), which stays meaningful in a project of one memory."""

    cosine: float
    combined: float
    weight: float

    def clears(self, c: Candidate) -> bool:
        sim = c.similarity or 0.0
        return sim >= self.cosine or sim + self.weight * c.coverage >= self.combined


@dataclass(frozen=True)
class Judged:
    """The gate on a calibrated relevance probability: p = sigmoid(w_logit × cross-encoder logit +
    w_cosine × cosine + w_coverage × coverage + w_general × general + bias), fitted (logistic
    regression) on the tuning split of the codebase set with bench/calibrate.py, so p reads as how
    likely the memory answers the question. `general` is 1 when the prompt reads as a
    general-knowledge question (asking.generality: "postgres vs mysql", "what is htmx"; less for a long
    prompt that reads so only by its task's wording): the
    cross-encoder and cosine rate those as well answered by the memory naming the technology as a
    real question about the project. A candidate is returned when p ≥ threshold.

    `entity` is 1 when a short question (under rerank.MIN_PROMPT_WORDS words) shares a product's name
    with the memory and the cross-encoder, reading both with that name replaced by "it"
    (entities.masked), scores the pair at or under `entity_floor`: the name was all they shared ("is
    redis single threaded" and "we use Redis only as the Celery broker"; entities.py). It is asked only
    of a candidate the other features would pass, so it costs a pair only there.

    Only the first stage's best `depth` candidates can be returned. The cross-encoder costs
    milliseconds per pair, so it runs only for the unsure: its logit is bounded
    (rerank.LOGIT_RANGE), so cosine and coverage alone often settle p on one side of the threshold
    whatever the model would say."""

    w_logit: float
    w_cosine: float
    w_coverage: float
    bias: float
    threshold: float
    fallback: Gate  # when the cross-encoder cannot load
    w_general: float = 0.0
    depth: int = 3
    clauses: bool = True  # a long prompt's logit is its best clause's (rerank.Judge.best_logits)
    # Below this cosine a candidate is not judged and not returned: on the tuning split no answer
    # cleared the gate below 0.26, and half of the unrelated prompts' candidates sit under 0.11.
    min_cosine: float = 0.2
    # The same floor for a prompt read by its clauses (rerank.clauses: the hook's task-first prompts): the
    # task dilutes its whole-text cosine, so its answer's sits lower (5th / 10th percentile on the four
    # tuning codebases 0.29 / 0.32, against 0.33 / 0.38 for short questions), while the judged clause can
    # still name it ("what's our setup and why?" and the memory on where production MySQL runs: cosine
    # 0.17, clause logit 1.4). Issue 34 round eight, docs/benchmarks.md.
    clause_min_cosine: float = 0.15
    # A candidate under those floors is still judged when it holds this share of the question's telling
    # words: a memory written mostly as code has a low cosine with any question ("deploy to prod" and
    # "Deploy queuekeeper to GKE with `make helm-release SVC=queuekeeper ENV=prod` …": 0.18, coverage 0.55,
    # the cross-encoder's logit +4.3). Issue 34 round fourteen, docs/benchmarks.md.
    relief_coverage: float = 0.5
    w_entity: float = 0.0
    entity_floor: float = -9.0

    def probability(self, logit: float, c: Candidate, general: float = 0.0, entity: bool = False) -> float:
        z = self.w_logit * logit + self.w_cosine * (c.similarity or 0.0) + self.w_coverage * c.coverage + self.bias
        z += self.w_general * general + self.w_entity * entity
        return 1.0 / (1.0 + math.exp(-z))

    def settled(self, c: Candidate, general: float = 0.0, named: bool = False, clauses: bool = False) -> bool | None:
        """True / False when the first stage's evidence decides alone, None when the model must judge.
        `named`: the candidate shares a product's name with a short question, so `entity` may be 1.
        `clauses`: the prompt is judged by its clauses (its floor is clause_min_cosine)."""
        low, high = rerank.LOGIT_RANGE
        floor = self.clause_min_cosine if clauses else self.min_cosine
        if (c.similarity or 0.0) < floor and c.coverage < self.relief_coverage:
            return False
        if self.probability(low, c, general, entity=named) >= self.threshold:
            return True
        if self.probability(high, c, general) < self.threshold:
            return False
        return None


# Fitted and chosen on the tuning split of the codebase set (bench/calibrate.py); held-out
# results and LoCoMo in docs/benchmarks.md. Embedders nobody calibrated keep the cosine gate below.
MINILM_JUDGED = Judged(
    w_logit=0.338,
    w_cosine=20.644,
    w_coverage=3.648,
    bias=-2.935,
    threshold=0.7,
    # Round three: fitted alone on the tuning split, the other weights kept (bench/calibrate.py
    # fit: refitting them all too let LoCoMo's hard negatives under 60 %, docs/benchmarks.md).
    w_general=-10.026,
    # Round eight: fitted alone on the tuning split, the other weights kept (bench/calibrate.py fit).
    w_entity=-6.825,
    fallback=Gate(cosine=0.4, combined=0.5, weight=0.4),  # issue 15's calibration (docs/benchmarks.md)
)
JUDGED = {
    "local:all-MiniLM-L6-v2": MINILM_JUDGED,
    # The opt-in all-mpnet-base-v2 (`yullu models install`) reuses MiniLM's weights: its cosine scale is close
    # (no-answer p90 .434 against .455), and on dumps made with mpnet as the embedder (issue 34 round twenty-one,
    # four tuning codebases) they answered 130 of 180 paraphrases first against MiniLM's 121, the same 195 of 206
    # questions and 164 long prompts, leaks 4 / 31 / 1 against 5 / 32 / 1, while every leave-one-out refit did
    # worse (cosine + bias 117, every weight 108). Without an entry it fell back to the cosine-only DEFAULT_GATE.
    "local:all-mpnet-base-v2": MINILM_JUDGED,
}


# The cosine + coverage gate, for embedders without a calibrated judge (remote models): strict on
# cosine, the same keyword evidence.
GATES: dict[str, Gate] = {}
DEFAULT_GATE = Gate(cosine=0.5, combined=0.6, weight=0.4)


# Written to every config.toml before the gate existed; read as "not set" so upgraded installs get the gate.
LEGACY_DEFAULT_FLOOR = 0.45


def gate_for(embedder_id: str) -> Gate | Judged:
    return JUDGED.get(embedder_id) or GATES.get(embedder_id, DEFAULT_GATE)


def warm_up_gate() -> None:
    """Load the active embedder's cross-encoder now (web start), not in the first search; then build what the
    first question would build inside its request: the thesaurus' rules (its ~6,900 words stemmed by
    PostgreSQL) and the patterns of the products it names. Cost only (issue 34, round seventeen): at 622 groups
    these took ~140 ms of CPU (0.5 s of wall time) in the first retrieve after a start, inside `yullu bench
    load`'s measured window. The model first: a database not up yet must not leave it unloaded."""
    if isinstance(gate_for(get_embedder().id), Judged):
        rerank.judge.logits("warm up", ["warm up"])
    synonyms.rules()
    entities.products()
    asking._product_works()  # asks_in_general's "how does <product> … work" pattern


def configured_floor(retrieval: dict[str, Any] | None = None) -> float | None:
    """`[retrieval].min_similarity` (of `retrieval`, else the global config) when someone set one;
    None means the calibrated gate."""
    value = (retrieval or settings.YULLU["retrieval"])["min_similarity"]
    return None if value is None or value == LEGACY_DEFAULT_FLOOR else float(value)


def judged_test(
    query: str, ordered: list[Candidate], gate: Judged, general: float = 0.0, choice: bool | None = None
) -> Callable[[Candidate], bool]:
    """The calibrated gate over the first `gate.depth` candidates: the ones whose cosine and coverage
    do not settle it are judged by the cross-encoder, in one batch (cached per question and text).
    `general`: the prompt as typed (a long paste: its question, focus.py), before shorthand is spelled
    out, reads as a general-knowledge question (asking.generality, 0 to 1). `choice`: the prompt asks about a
    choice made (asking.asks_about_a_choice), when the caller has read it already.
    A candidate without a vector yet (backfill pending) is kept on its keyword evidence, as before."""
    top = [c for c in ordered[: gate.depth] if c.similarity is not None]
    by_clause = gate.clauses and bool(rerank.clauses(query))
    verdicts = {c.memory_id: gate.settled(c, general, clauses=by_clause) for c in top}
    # A question about a choice names the products chosen between: sharing only their names is its point.
    short = bool(gate.w_entity) and len(query.split()) < rerank.MIN_PROMPT_WORDS
    short = short and not (asks_about_a_choice(query) if choice is None else choice)
    # Only a candidate that may pass can share only a name: one the first stage rejects is not read
    # (a short prompt whose candidates all fall under the gate's floor reads no text).
    maybe = [c for c in top if verdicts[c.memory_id] is not False]
    texts = contents_of(maybe) if short else {}
    names = {c.memory_id: entities.shared(query, texts[c.memory_id]) for c in top if c.memory_id in texts}
    passed: set[int] = set()
    unsure: list[Candidate] = []  # the model's logit decides
    named: list[Candidate] = []  # cosine and coverage pass it, unless it shares only a name (asked first)
    for c in top:
        verdict = verdicts[c.memory_id]
        if verdict and names.get(c.memory_id) and not gate.settled(c, general, named=True, clauses=by_clause):
            named.append(c)
        elif verdict:
            passed.add(c.memory_id)
        elif verdict is None:
            unsure.append(c)
    entity = _entity(query, named, texts, names, gate)
    for c in named:
        if not entity[c.memory_id]:
            passed.add(c.memory_id)
        elif gate.probability(rerank.LOGIT_RANGE[1], c, general, entity=True) >= gate.threshold:
            unsure.append(c)
    if unsure:
        texts |= contents_of([c for c in unsure if c.memory_id not in texts])
        unsure = [c for c in unsure if c.memory_id in texts]
        judged = judged_logits(query, [texts[c.memory_id] for c in unsure], gate.clauses)
        logits = {c.memory_id: logit for c, logit in zip(unsure, judged, strict=True)}
        # Only a candidate that would pass is asked whether it shares more than a name with the question.
        asked = [
            c
            for c in unsure
            if c.memory_id not in entity and gate.probability(logits[c.memory_id], c, general) >= gate.threshold
        ]
        entity |= _entity(query, asked, texts, names, gate)
        for c in unsure:
            c.relevance = gate.probability(logits[c.memory_id], c, general, entity.get(c.memory_id, False))
            if c.relevance >= gate.threshold:
                passed.add(c.memory_id)

    def test(c: Candidate) -> bool:
        return c.similarity is None or c.memory_id in passed

    return test


def logits_of(query: str, cands: list[Candidate], clauses: bool = True) -> dict[int, float]:
    """Memory id → the cross-encoder's logit for `query`, as the gate asks it (judged_logits), in one
    batch; pairs the gate already judged come from the judge's cache."""
    texts = contents_of(cands)
    ids = [c.memory_id for c in cands if c.memory_id in texts]
    return dict(zip(ids, judged_logits(query, [texts[i] for i in ids], clauses), strict=True))


def contents_of(cands: list[Candidate]) -> dict[int, str]:
    """Memory id → content of `cands`: as the search's `details` read them (Candidate.content), and those it
    did not (a caller's own candidates) read by id; a memory deleted since is absent. Cost only (issue 34,
    round twenty-three): asking_last, the gate and the rewordings each read memories_memory by id again."""
    texts = {c.memory_id: c.content for c in cands if c.content is not None}
    return texts | _contents([c.memory_id for c in cands if c.content is None])


def _contents(ids: list[int]) -> dict[int, str]:
    # Cost only (issue 34, round eighteen): the rows of Memory.objects.filter(pk__in=ids).values_list("pk",
    # "content") in one statement without the ORM's query building, which cost about as much as the statement.
    if not ids:
        return {}
    with connection.cursor() as cur:
        cur.execute("SELECT id, content FROM memories_memory WHERE id = ANY(%s)", [ids])
        return dict(cur.fetchall())


def _entity(
    query: str, cands: list[Candidate], texts: dict[int, str], names: dict[int, list[str]], gate: Judged
) -> dict[int, bool]:
    """Per candidate sharing a product name with the question: whether it shares only that
    (the masked judgement at or under the gate's floor, Judged.w_entity)."""
    cands = [c for c in cands if names.get(c.memory_id)]
    logits = entity_logits(query, [(texts[c.memory_id], names[c.memory_id]) for c in cands])
    return {c.memory_id: m is not None and m <= gate.entity_floor for c, m in zip(cands, logits, strict=True)}


def entity_logits(query: str, pairs: list[tuple[str, list[str]]]) -> list[float | None]:
    """Per (memory text, the product names it shares with the question): the cross-encoder's logit for
    both read with those names replaced by "it" (entities.masked), in one batch; None without names."""
    asked = [(entities.masked(query, names), entities.masked(text, names)) for text, names in pairs if names]
    logits = iter(rerank.judge.logits_many(asked) if asked else [])
    return [next(logits) if names else None for _, names in pairs]


# The cross-encoder reads the question with the thesaurus' words that the memory holds ("how does
# the backend get shipped live (deploy)"): on its own it scores a paraphrase's answer at its floor.
HINT_SYNONYMS = True


def judged_logits(query: str, texts: list[str], clauses: bool = True) -> list[float]:
    """The cross-encoder's logit per text, in one batch: for each, the question (or its best clause
    when `clauses`) with the synonym words that text holds appended (synonyms.hint)."""
    if not texts:
        return []
    words = synonyms.words_for(set(bm25.query_lexemes(query))) if HINT_SYNONYMS else set()
    hints = [synonyms.hint(words, t) if words else "" for t in texts]
    return rerank.judge.best_logits(query, texts, hints, split=clauses)


def relevance_test(floor: float | None, gate: Gate, embedded: bool) -> Callable[[Candidate], bool]:
    """Whether a candidate may be returned: a plain cosine floor when one is given, else the gate.
    A memory with no vector yet (backfill pending, or keyword-only mode) can only arrive through a
    keyword match, and is kept on that evidence."""

    def test(c: Candidate) -> bool:
        if c.similarity is None or not embedded:
            return True
        return c.similarity >= floor if floor is not None else gate.clears(c)

    return test
