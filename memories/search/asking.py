"""What a prompt asks, read from its wording: a general-knowledge question ("postgres vs mysql",
"what is htmx", "explain how redis streams work, for a course") or one about the project.

The relevance gate (memories.search.gates.Judged) weighs it: the cross-encoder, trained on web
search, rates a general question about a technology as well answered by "we use Redis for X" as
a real question about the project is by its memory, and cosine agrees. The wording is what tells
them apart: a general question compares, defines, asks for an explanation, a recommendation or a
generic example, and does not address the project ("we", "our", "this repo"). It is one feature of
the gate's fit, not a veto: a strong enough match still clears (docs/decisions.md).
"""

from __future__ import annotations

import functools
import re

from . import synonyms
from .focus import asks, clauses_of
from .rerank import MIN_PROMPT_WORDS

_WORD = r"[\w.+#-]+"
_APOS = "['\u2019]"
# A thing of ours is named with an article or a possessive ("what does the sla_watch dag do").
_NOT_OURS = r"(?!(?:the|this|that|it|our|your|my)\b)"
_PREPOSITIONS = "to|by|on|in|for|of|at|with|from|about|into|over"
_REALLY = "(?:exactly|really|actually)"
_LANGUAGES = (
    r"go|golang|python|java|rust|ruby|javascript|js|typescript|ts|c#|c\+\+|php|kotlin|swift|scala|elixir|bash|sql|dart"
)

# Each pattern is a common way of asking about a thing in general, not about this project.
GENERAL = tuple(
    re.compile(p, re.I)
    for p in (
        # comparing technologies, as a question ("postgres vs mysql" is TASK's: a task says "vs" too)
        r"\bdifference between\b|\bdiffer\b|\bcomparison\b|\bbetter than\b|\bpros (?:and|&|/) ?cons\b",
        # what a product can do: "does launchdarkly support …", "does nats jetstream support …" (not
        # "which team does Tim support", nor "does the importer handle …": "the" points at a part of ours)
        rf"^\s*(?:does|do|can|is) (?!(?:the|this|that|it|your)\b){_WORD}(?: {_WORD}){{0,2}} (?:support|handle|allow)\b",
        # how a product behaves for everyone: "how does sidekiq handle job uniqueness by default" (not
        # "what port does the api listen on by default": "the" points at a part of ours), "how does
        # vault's transit engine work", "how does snowflake's micro-partitioning and clustering work" (a
        # product's own part, named by its possessive in up to four words)
        r"^(?!.*\b(?:the\b(?! box\b)|this\b|that\b|it\b)).*\b(?:by default|out of the box)\b"
        rf"|^\s*how (?:does|do|is|are) (?!(?:the|this|that|it|your)\b){_WORD}{_APOS}s? {_WORD}"
        rf"(?: {_WORD}){{0,2}} work\b",
        # what a product costs or a term means, asked as a bare phrase: "cloudflare workers pricing",
        # "turborepo dependsOn ^build meaning"
        r"\b(?:pricing|meaning)\s*\??\s*$",
        # a definition: "what is htmx", "what are webhooks", "what is mongodb good for"
        rf"^\s*(?:what\s+(?:is|are)|whats|what{_APOS}s)\s+(?:a\s+|an\s+)?{_WORD}(?:\s+{_WORD})?"
        r"(?:\s+(?:good|used)\s+for)?\s*\??\s*$",
        # what a product or its part does: "what does databricks photon do", "what does argo cd self-heal do"
        rf"^\s*what does {_NOT_OURS}{_WORD}(?: {_WORD}){{0,2}} do\s*\??\s*$",
        # a definition of three or four bare words: "what is kafka exactly-once semantics" (not "what is Joanna
        # allergic to": a preposition makes it a sentence about someone, not a term)
        rf"^\s*(?:what\s+(?:is|are)|whats|what{_APOS}s)\s+{_NOT_OURS}(?!.*\b(?:{_PREPOSITIONS})\b)"
        rf"{_WORD}(?:\s+{_WORD}){{2,3}}\s*\??\s*$",
        # a how-to in a language, nothing of ours named: "how do i reverse a linked list in python", "how do
        # generics work in go" (not "how do i run the tests in go")
        rf"^\s*how (?:to|do i|do you|can i|do|does) (?![^?]*\b(?:the|this|our|my)\b)[^?]*\b(?:in|with) (?:{_LANGUAGES})"
        r"\s*\??\s*$",
        # an exercise or a word of a language: "write fizzbuzz in dart", "what does suspend mean in kotlin" (not
        # "write the backfill in python", nor "what does 'hold' mean in our domain")
        rf"^\s*(?:write|implement) (?![^?]*\b(?:the|this|our|my)\b)[^?]*\bin (?:{_LANGUAGES})\s*\??\s*$"
        rf"|^\s*what does \S+ mean in (?:{_LANGUAGES})\s*\??\s*$",
        # a longer definition, of a thing named with its article: "what is a kubernetes pod disruption budget",
        # "what's an mqtt retained message", "what exactly is a heroku dyno" (a part of ours is "the" or "our" one)
        rf"^\s*(?:what\s+(?:{_REALLY}\s+)?(?:is|are)|whats|what{_APOS}s)\s+(?:{_REALLY}\s+)?(?:a|an)\s+{_WORD}"
        rf"(?:\s+{_WORD}){{0,4}}\s*\??\s*$",
        # a product's release notes, or its syntax: "what's new in go 1.23", "pydantic v2 field_validator syntax"
        rf"^\s*(?:what\s+is|whats|what{_APOS}s)\s+new\s+in\b|\bsyntax(?:\s+example)?\s*\??\s*$",
        r"\bin general\b|\bgeneral terms\b",
        # a generic example, for learning or for someone else
        r"\b(?:for|like) (?:a|an) (?:beginner|course|class|tutorial|blog|interview|talk|presentation)\b"
        r"|\btoy (?:project|example|repo|app)\b"
        r"|\b(?:homelab|tutorial|certification|curiosity|interview prep|generic|nothing project[- ]specific)\b"
        r"|\b(?:side|personal|pet|hobby) (?:project|app|setup)\b|\ba friend(?:'s|\u2019s)? (?:project|app)\b"
        r"|\bgame jam\b"
        r"|\bfor (?:a|my) class\b|\b(?:purely )?educational\b|\bas an exercise\b|\banother company\b"
        r"|\bunder the hood\b|\bprimer\b|\b(?:teach me|learn) the basics\b|\bgeneral (?:overview|steps|idea|intro)\b"
        r"|\bgive me (?:a|an|some) [^.?!]*\bexamples?\b|\b(?:an|some) examples? (?:of|for)\b"
        r"|\bfor (?:a|an) (?:plain|simple|basic|minimal|small|typical|sample|hypothetical) [\w.+#-]+"
        r" (?:project|app|application|startup|team|service|api|site|company)\b",
        # advice asked of the assistant (not "what did Caroline recommend to Melanie")
        r"\b(?:any|some|your)\s+(?:recommendations?|suggestions?)\b"
        r"|\bgood\s+[\w-]+\s+(?:for|to)\b|\bbest\s+(?:way|practice|tool|library|gui)",
        # how to build a new thing from scratch: "how to write a celery task"
        r"\bhow (?:do i|do you|to|can i|should i) (?:write|create|make|build|set up|setup|use|implement) (?:a|an)\b",
    )
)

# A request for a new piece of writing or code ("write a new …" adds to something that exists, as project
# tasks do).
REQUEST = re.compile(
    r"^\W*(?:(?:can|could|would) you |please |help me )?(?:write|generate|create|make) (?:me )?(?:a|an)\b(?! new\b)",
    re.I,
)

# Wordings a general question shares with a task about the project: "explain", "x vs y", a request
# for a piece of writing or code ("write me a terraform module for an s3 bucket", "write a sql query
# for last month's runs, which db do i connect as?"), a suggestion asked for. Alone they mark the
# prompt as general, unless a sentence of its own asks a question with no general wording: a long
# task-first prompt often asks about the project in its second sentence (issue 34, round thirteen).
TASK = (REQUEST,) + tuple(
    re.compile(p, re.I)
    for p in (
        rf"\bvs\.?(?!\w)|\bversus\b|\bcompar(?:e|ing)\s+{_WORD}\s+(?:and|with|to|vs)\b",
        # an explanation ("how does X work" is not one: "how does login work" asks about the project as
        # often as "how does elasticsearch scoring work" asks in general)
        r"\bexplain(?:ed)?\b",
        r"\b(?:recommend|suggest)\s+(?:a|an|me|some|good|the best)\b",
    )
)

# The prompt addresses the project: its team (and its newcomers: "explain to a new hire why …"), its repository,
# its code ("explain this function" asks about the code in front of the assistant, not in general).
PROJECT = re.compile(
    r"\b(?:we|our|ours|us|here|the (?:repo|codebase|project|team)"
    r"|(?:a|the) new (?:hire|joiner|teammate|team member|engineer)s?"
    r"|this (?:repo|repository|project|codebase|service|app|code|function|method|class|module|file|test|error|bug"
    r"|branch|pr|commit|endpoint)|my (?:code|branch|pr|change|commit|tests?))\b",
    re.I,
)


# The prompt says it is not about the project: "just as an exercise, not for our repo", "nothing specific to
# our code".
DISOWNED = re.compile(
    r"\b(?:not|nothing|unrelated)\b(?:\s+[\w-]+){0,2}\s+(?:for|to|in|about|from|with)\s+(?:our|this|the)"
    r"\s+(?:repo|repository|code|codebase|project|stack|app|service)\b",
    re.I,
)


# A question about a choice made ("why postgis and not timescale", "why rds instead of jawsdb", "why not grpc
# for pricing") asks about the project's decision, whatever products it names: on 39 codebase files it is
# worded so by 80 questions and paraphrases and by no prompt without an answer (issue 34, round fifteen).
CHOICE = re.compile(r"^\s*why\b[^?]*\b(?:instead of|rather than|and not|over|not)\b", re.I)


# A path in a repository ("reports/queries.py") or quoted code (`retention_days`) points at the code in
# front of the assistant: "write a raw SQL query for the report in reports/queries.py" is a project task.
CODE = re.compile(r"(?:[\w.-]+/)+[\w-]+\.[a-z]{1,5}\b|`[^`]+`")


def asks_in_general(query: str, choice: bool | None = None) -> bool:
    """Whether `query` reads as a general-knowledge question rather than one about the project.
    `choice`: asks_about_a_choice(query), when the caller has it already (the search: its gate reads it too)."""
    if DISOWNED.search(query):
        return True
    if PROJECT.search(query) or CODE.search(query):
        return False
    if asks_about_a_choice(query) if choice is None else choice:
        return False
    if _general(query):
        return True
    return _cued(TASK, query) and not _asks_on_its_own(query)


# How general a long prompt reads when only a task's wording says so (TASK: "write a …", "explain", "x vs y"),
# against 1 for a general question's own wording. A task typed to an assistant is first of all a task on the
# project, and its question may sit in a clause no rule reads ("… double vs BigDecimal doesn't matter much
# right?"): on 29 codebase files the full weight kept 11 of 36 such long prompts' answers out, for 3 of 350
# long prompts without an answer (issue 34, round nineteen, docs/benchmarks.md). A short prompt keeps the full
# weight: "grpc unary vs server streaming" is a general question as often as "stg vs int models" is ours.
TASK_GENERALITY = 0.6


def generality(query: str, choice: bool | None = None) -> float:
    """How strongly `query` reads as a general-knowledge question (0 to 1), the relevance gate's feature:
    1 for a general question's wording, TASK_GENERALITY for a long prompt (one judged by its clauses,
    rerank.MIN_PROMPT_WORDS) that is general only by its task's wording, 0 for a question about the project."""
    if not asks_in_general(query, choice):
        return 0.0
    if len(query.split()) < MIN_PROMPT_WORDS or DISOWNED.search(query) or _general(query):
        return 1.0
    return TASK_GENERALITY


def asks_about_a_choice(query: str) -> bool:
    """Whether `query` asks why the project chose one thing over another (CHOICE)."""
    return bool(CHOICE.search(query))


def _cued(patterns: tuple[re.Pattern[str], ...], text: str) -> bool:
    return any(p.search(text) for p in patterns)


def _general(text: str) -> bool:
    return _cued(GENERAL, text) or bool(_product_works().search(text))


# Regulations are not products: "how does hipaa audit logging work" asks about the project's own.
NOT_PRODUCTS = ("compliance",)


@functools.cache
def _product_works() -> re.Pattern[str]:
    """How a part of a product works, the product named first ("how does postgres mvcc work", "how do
    github actions matrix builds work"; a product the thesaurus lists under a hypernym). A part of ours is
    named otherwise ("how does login work", "how does HuddleReaper work"), or with "the" / "our"
    (PROJECT); a word merely written as a name is not enough, since a team names its services that way
    (issue 34, rounds thirteen and fourteen, docs/benchmarks.md)."""
    names = {
        t.lower()
        for sources, targets in synonyms.thesaurus()
        if sources != targets and not set(sources) & set(NOT_PRODUCTS)
        for t in targets
    }
    alternatives = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    return re.compile(
        rf"^\s*how (?:does|do) (?:an? )?(?:{alternatives})(?:e?s)? (?:{_WORD} ){{0,3}}?works?\s*\??\s*$", re.I
    )


# A clause pointing at someone or something in particular: the asker, the team, or a thing named with "the"
# ("what should the cdr be tagged with", "how do they get into the maintenance screen"). A relative clause
# after a request points at nothing ("a polite email to my landlord …, which has been broken for weeks").
_POINTED = re.compile(r"\b(?:i|we|me|my|us|our|the|they)\b", re.I)


_QUESTION_WORD = "(?:how|what|where|which|when|who|why)"
# A sentence's clauses: at commas, and at "and" / "then" / "also" / "but" before a question word.
_SUBCLAUSE = re.compile(rf",\s+|\s+(?:and|then|also|but)\s+(?=(?:also\s+)?(?:tell me|{_QUESTION_WORD})\b)", re.I)
# A clause that starts by asking ("what do i need running", "tell me how to run …").
_WH = re.compile(rf"^\s*(?:also\s+|and\s+)?(?:tell me\s+)?{_QUESTION_WORD}\b", re.I)


def _asks_on_its_own(query: str) -> bool:
    """Whether a sentence of `query` asks a question with no general wording ("write a sql query for
    last month's runs. which db do i connect as?"), or, after a request for a piece of code, a clause of
    it asks one about someone or something in particular ("write an integration test for the ingester, what
    do i need running", "write a unit test for the routing path, what should the cdr be tagged with", "… and
    tell me how to run the unit tests locally"): the task's wording does not make it general. On the codebase
    files the clauses turn 5 long prompts with an answer in the first person (issue 34, round sixteen) and 5
    more pointing with "the" or "they" (round seventeen), and no prompt without one."""
    sentences = clauses_of(query)  # as the gate judges a long prompt: "then fix it" asks nothing
    if len(sentences) > 1 and any(asks(s) and not _general(s) and not _cued(TASK, s) for s in sentences):
        return True
    parts = [p for s in sentences for p in _SUBCLAUSE.split(s) if p]
    return (
        len(parts) > 1
        and bool(REQUEST.search(parts[0]))
        and any(_WH.match(p) and _POINTED.search(p) and not _general(p) and not _cued(TASK, p) for p in parts[1:])
    )
