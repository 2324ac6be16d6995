"""Developer tool: write the BACKGROUND corpus of generic prompts (issue 34, round ten; bench/hub_study.py).

A memory's background is how close it comes to prompts that ask nothing about any project: chit-chat,
general coding questions, general questions naming common technologies ("how do I add an index in
postgres", "what is a kubernetes pod"). A general memory ("we use PostgreSQL 16 for everything") is near
many of them; a specific one is near few. The corpus was written for this by hand, as short lists
(openers, topics, technologies with their usual questions, languages with their usual tasks) combined by
the templates below, then sampled with a fixed seed, so it is reproducible and reviewable here. No prompt
of any evaluation or training set was copied into it; prompts that happen to equal one of the training
/ tuning sets' prompts exactly are dropped (`write` checks).

Run: python -m bench.background_corpus bench/data/background_prompts.json
Not part of the product path: the study did not keep the idea, so the product reads no background (round ten).
"""

from __future__ import annotations

import itertools
import json
import random
import sys
from pathlib import Path

SEED = 34
SIZE = 1500

CHAT = [
    "hi",
    "hello there",
    "good morning!",
    "thanks, that helped",
    "thank you so much",
    "ok cool",
    "sounds good, go ahead",
    "nevermind",
    "can you help me with something?",
    "what can you do?",
    "who are you?",
    "are you there?",
    "how's it going",
    "tell me something interesting",
    "i'm bored, any ideas?",
    "let's start over",
    "never mind that, new topic",
    "that's not what I meant",
    "can you explain that again more simply?",
    "give me a shorter answer",
    "summarise what we just discussed",
    "what's the weather like on mars",
    "what day of the week was july 4 1776",
    "how many days until christmas",
    "what time zone is tokyo in",
    "convert 30 celsius to fahrenheit",
    "how many ounces in a pound",
    "what's 15% of 240",
    "is a tomato a fruit or a vegetable",
    "why is the sky blue",
    "how far away is the moon",
    "who painted the mona lisa",
    "who wrote pride and prejudice",
    "what's the tallest mountain in europe",
    "how do airplanes stay in the air",
    "explain photosynthesis to a ten year old",
    "what is the meaning of life",
    "recommend a good sci-fi novel",
    "suggest a name for my cat",
    "what should I cook tonight",
    "how long should I boil an egg",
    "give me a 20 minute workout",
    "how do I get better sleep",
    "tips for a job interview",
    "how do I write a cover letter",
    "help me plan a trip to lisbon",
    "what's a good gift for my dad",
    "translate 'good night' into german",
    "what does 'carpe diem' mean",
    "teach me a word in japanese",
    "write me a limerick about a cat",
    "compose a short poem about the sea",
    "tell me a fun fact about octopuses",
    "what's the difference between weather and climate",
    "how does compound interest work",
    "should I rent or buy a house",
    "how do vaccines work",
    "who won the world cup in 2010",
    "how many players are on a soccer team",
    "explain the offside rule",
    "what are the rules of chess castling",
    "recommend a board game for four people",
    "how do I make sourdough starter",
    "what's the best way to learn guitar",
    "how do I stop procrastinating",
    "write a thank you note to my neighbour",
    "draft a birthday message for a coworker",
    "give me a motivational quote",
    "what is the speed of light",
    "how big is the universe",
    "what is a black hole",
    "why do cats purr",
    "how do bees make honey",
    "what causes earthquakes",
    "what's the population of canada",
    "what language do they speak in brazil",
    "how do I say thank you in korean",
    "help me write an out of office reply",
    "what's a healthy breakfast",
    "how much water should I drink a day",
    "is coffee bad for you",
    "what's the plot of hamlet",
    "summarise the french revolution in three sentences",
    "who was ada lovelace",
    "who invented the telephone",
    "when did the berlin wall fall",
    "explain inflation simply",
    "what's a good stretching routine for my back",
    "i feel stressed, any advice?",
    "lol",
    "haha nice",
    "perfect, thanks!",
    "that's wrong",
    "try again",
    "continue",
    "go on",
    "yes please",
    "no thanks",
    "what do you think?",
    "do you like music?",
    "tell me a riddle",
    "play twenty questions with me",
]

CREATIVE = ["a haiku", "a limerick", "a short poem", "a two line rhyme", "a joke", "a short story", "a toast"]
SUBJECTS = [
    "autumn",
    "the ocean",
    "coffee",
    "mondays",
    "my dog",
    "rainy days",
    "the moon",
    "a lighthouse",
    "friendship",
    "winter mornings",
    "a lost sock",
    "pizza",
    "space travel",
    "a sleepy cat",
    "the city at night",
    "mountains",
    "a birthday",
    "gardening",
    "trains",
    "the first day of spring",
]
CREATIVE_FORMS = ["write {w} about {s}", "can you write {w} about {s}", "give me {w} about {s}"]

# (technology, questions people ask about it in general, naming no project)
TECH = {
    "postgres": [
        "how do I create an index in postgres",
        "what is the difference between varchar and text in postgres",
        "how do I list all tables in postgres",
        "postgres vacuum vs vacuum full",
        "how do I see running queries in postgresql",
        "how to back up a postgres database with pg_dump",
        "what does explain analyze show in postgres",
        "how do I upgrade postgres to a new major version",
        "how do postgres transactions and isolation levels work",
        "postgres jsonb vs json",
        "how do I create a user and grant permissions in postgresql",
        "why is my postgres query slow",
        "how do I restore a pg_dump file",
        "what is a postgres materialized view",
        "how does postgres replication work",
    ],
    "mysql": [
        "how do I reset the mysql root password",
        "mysql vs postgres, which should I learn",
        "how to export a mysql table to csv",
        "what is innodb",
        "how do I enable the slow query log in mysql",
    ],
    "sqlite": ["when should I use sqlite", "how do I open a sqlite file", "is sqlite good for production"],
    "redis": [
        "what is redis used for",
        "how does redis persistence work, rdb vs aof",
        "how do I set a key with an expiry in redis",
        "is redis single threaded",
        "redis pub/sub vs streams",
        "how do I see memory usage in redis",
    ],
    "kafka": [
        "what is a kafka consumer group",
        "kafka vs rabbitmq",
        "how are kafka partitions assigned",
        "what does kafka retention mean",
    ],
    "rabbitmq": ["what is an exchange in rabbitmq", "how do dead letter queues work in rabbitmq"],
    "mongodb": ["what is mongodb good for", "how do I create an index in mongodb", "mongodb vs postgres"],
    "elasticsearch": ["how does elasticsearch scoring work", "what is an elasticsearch shard"],
    "kubernetes": [
        "what is a kubernetes pod",
        "how do I restart a deployment in kubernetes",
        "deployment vs statefulset",
        "how do kubernetes liveness probes work",
        "what is a kubernetes ingress",
        "how do I view logs of a pod",
        "how do I scale a deployment with kubectl",
        "what is a helm chart",
        "how does a kubernetes service find pods",
        "why is my pod in crashloopbackoff",
        "what are resource requests and limits in kubernetes",
        "how do configmaps and secrets differ in kubernetes",
    ],
    "docker": [
        "how do I remove all stopped docker containers",
        "what is the difference between an image and a container",
        "how do docker volumes work",
        "how do I make my docker image smaller",
        "docker compose up vs docker compose run",
        "how do I see logs of a docker container",
        "what is a multi-stage docker build",
        "why does my docker build not use the cache",
    ],
    "terraform": [
        "what is terraform state",
        "terraform plan vs apply",
        "how do terraform modules work",
        "how do I import existing resources into terraform",
    ],
    "ansible": ["what is an ansible playbook", "ansible vs terraform"],
    "aws": [
        "what is the difference between s3 and ebs",
        "how do IAM roles work",
        "what is an aws lambda cold start",
        "how do I host a static site on s3",
        "ec2 vs fargate",
        "what is an aws vpc",
    ],
    "gcp": ["what is google cloud run", "bigquery pricing explained"],
    "azure": ["what is azure blob storage", "what is an azure resource group"],
    "nginx": [
        "how do I set up nginx as a reverse proxy",
        "how do I redirect http to https in nginx",
        "what does proxy_pass do",
    ],
    "linux": [
        "how do I find which process is using a port on linux",
        "what does chmod 755 mean",
        "how do I check disk usage on linux",
        "how do I run a command in the background in bash",
        "what is a cron expression",
        "how do I set an environment variable permanently",
        "how do I tail a log file",
        "what does sudo do",
        "how does systemd work",
        "how do I make a bash script executable",
    ],
    "git": [
        "how do I undo my last git commit",
        "git merge vs rebase",
        "how do I squash commits",
        "how do I delete a remote branch",
        "what does git cherry-pick do",
        "how do I resolve a merge conflict",
        "how do I change a commit message",
        "what is git stash",
        "how do I revert a pushed commit",
        "what's a good branching strategy",
        "how do I write a good commit message",
    ],
    "github": [
        "how do github actions work",
        "how do I cache dependencies in github actions",
        "what is a pull request template",
    ],
    "ci": ["what is continuous integration", "what is blue green deployment", "what is a canary release"],
    "react": [
        "how does useEffect cleanup work in react",
        "what is the virtual dom",
        "when should I use useMemo",
        "how do I fetch data in react",
        "react context vs redux",
        "why does my react component render twice",
        "what are react server components",
        "how do I handle forms in react",
        "what is prop drilling",
    ],
    "vue": ["vue vs react", "what is the vue composition api"],
    "angular": ["what is dependency injection in angular", "angular vs react for a big app"],
    "svelte": ["what is svelte", "how is svelte different from react"],
    "nextjs": ["what is server side rendering in next.js", "next.js app router vs pages router"],
    "javascript": [
        "what is a closure in javascript",
        "let vs const vs var",
        "how does the javascript event loop work",
        "what is a promise",
        "async await vs then",
        "how do I deep copy an object in javascript",
        "what does === mean",
    ],
    "typescript": [
        "what is a generic in typescript",
        "interface vs type in typescript",
        "what does the unknown type mean",
        "how do I type a react component's props",
    ],
    "node": ["what is npm", "npm vs yarn vs pnpm", "how do I read a file in node.js", "what is package-lock.json"],
    "python": [
        "how do I reverse a list in python",
        "what is a python decorator",
        "list comprehension vs map",
        "how do I read a csv file in python",
        "what is the GIL",
        "how do python virtual environments work",
        "how do I sort a dictionary by value",
        "what does if __name__ == '__main__' mean",
        "how do generators work in python",
        "pip vs poetry vs uv",
        "how do I handle exceptions in python",
        "what are python type hints for",
    ],
    "django": [
        "what is a django migration",
        "how do django signals work",
        "how do I add a custom admin action in django",
        "django vs flask",
        "what is the django orm's select_related",
        "how do I serve static files in django",
    ],
    "flask": ["how do I create a flask route", "what is a flask blueprint"],
    "fastapi": ["what is fastapi", "how does dependency injection work in fastapi"],
    "celery": ["what is celery used for", "how do celery retries work"],
    "pandas": [
        "how do I filter rows in a pandas dataframe",
        "how do I group by in pandas",
        "merge vs join in pandas",
    ],
    "numpy": ["what is numpy broadcasting", "how do I create an array of zeros in numpy"],
    "java": [
        "what is the difference between an interface and an abstract class in java",
        "how does garbage collection work in java",
        "what is a java stream",
        "maven vs gradle",
    ],
    "spring": ["what is spring boot", "how does spring dependency injection work"],
    "go": [
        "what is a goroutine",
        "how do channels work in go",
        "how do I handle errors in go",
        "what is a go interface",
        "go modules explained",
    ],
    "rust": [
        "what is the borrow checker in rust",
        "how do lifetimes work in rust",
        "what is cargo",
        "rust vs go for a web service",
        "what does unwrap do in rust",
    ],
    "c++": ["what is a smart pointer in c++", "what is raii", "stack vs heap in c++"],
    "c#": ["what is linq in c#", "async in c# explained"],
    "ruby": ["what is a ruby block", "what is rails good for"],
    "php": ["is php still worth learning", "what is laravel"],
    "swift": ["what is an optional in swift", "swiftui vs uikit"],
    "kotlin": ["what is a kotlin coroutine", "kotlin vs java for android"],
    "graphql": ["graphql vs rest", "what is a graphql resolver", "how do graphql subscriptions work"],
    "rest": ["what makes an api restful", "put vs patch", "what http status code for a validation error"],
    "grpc": ["what is grpc", "grpc vs rest"],
    "oauth": [
        "how does oauth 2 work",
        "what is a jwt",
        "session cookies vs jwt",
        "what is pkce",
        "what is openid connect",
    ],
    "security": [
        "what is sql injection",
        "what is xss and how do I prevent it",
        "what is csrf",
        "how should I store passwords",
        "what is cors",
    ],
    "testing": [
        "unit tests vs integration tests",
        "what is test driven development",
        "how do I mock a function in pytest",
        "what is a flaky test",
        "what is code coverage",
        "what is property based testing",
    ],
    "architecture": [
        "microservices vs monolith",
        "what is event sourcing",
        "what is cqrs",
        "what is the cap theorem",
        "what is a message queue for",
        "what is eventual consistency",
        "how does a load balancer work",
        "what is a cdn",
        "what is idempotency",
        "how does caching work",
        "what is sharding",
    ],
    "observability": [
        "what is prometheus",
        "how does grafana work",
        "what is opentelemetry",
        "logs vs metrics vs traces",
        "what is an slo",
    ],
    "ml": [
        "what is a neural network",
        "what is overfitting",
        "what is a transformer model",
        "what is an embedding",
        "how does gradient descent work",
        "what is cosine similarity",
    ],
    "data": ["what is an etl pipeline", "what is a data warehouse", "what is apache spark", "what is airflow"],
    "editors": [
        "vim vs emacs",
        "how do I exit vim",
        "best vscode extensions for python",
        "how do I set up a debugger in vscode",
    ],
    "regex": ["how do I match an email with a regex", "what does .*? mean in a regex"],
    "http": ["what is http/2", "what is a websocket", "what does a 502 bad gateway mean", "what is tls"],
    "dns": ["how does dns work", "what is a cname record", "what is ttl in dns"],
}

LANGS = ["python", "javascript", "typescript", "go", "rust", "java", "c#", "ruby", "kotlin", "bash", "c++", "php"]
TASKS = [
    "reverse a string",
    "read a file line by line",
    "parse json",
    "make an http request",
    "sort a list of objects by a field",
    "remove duplicates from a list",
    "check if a string is a palindrome",
    "format a date",
    "generate a random number",
    "write a unit test",
    "split a string by commas",
    "convert a string to an integer",
    "iterate over a map",
    "handle a timeout",
    "write to a file",
    "read environment variables",
    "run code in parallel",
    "define a class",
    "merge two dictionaries",
    "count words in a text",
    "find the max of a list",
    "flatten a nested list",
    "write a fizzbuzz",
    "implement binary search",
    "compute a fibonacci number",
    "measure how long a function takes",
    "log to stdout",
    "parse command line arguments",
    "open a sqlite database",
    "url encode a string",
]
TASK_FORMS = [
    "how do I {t} in {l}",
    "{l}: {t}",
    "what's the idiomatic way to {t} in {l}",
    "show me how to {t} in {l}",
    "write a function to {t} in {l}",
]

CONCEPTS = [
    "recursion",
    "big o notation",
    "a hash map",
    "a linked list",
    "dynamic programming",
    "a binary tree",
    "a race condition",
    "a deadlock",
    "a mutex",
    "memoization",
    "functional programming",
    "object oriented programming",
    "dependency injection",
    "the solid principles",
    "a design pattern",
    "the singleton pattern",
    "the observer pattern",
    "immutability",
    "a pure function",
    "tail recursion",
    "garbage collection",
    "a virtual machine",
    "a compiler",
    "an interpreter",
    "a race condition in threads",
    "semantic versioning",
    "technical debt",
    "pair programming",
    "code review",
    "a monorepo",
    "continuous deployment",
    "feature flags",
    "a rollback",
    "an api gateway",
    "rate limiting",
    "backpressure",
    "a circuit breaker",
    "exponential backoff",
    "a bloom filter",
    "a trie",
]
CONCEPT_FORMS = [
    "what is {c}",
    "explain {c} simply",
    "can you explain {c} with an example",
    "why would I use {c}",
    "give me an analogy for {c}",
]

COMPARE = [
    ("tabs", "spaces"),
    ("sql", "nosql"),
    ("rest", "graphql"),
    ("threads", "processes"),
    ("tcp", "udp"),
    ("docker", "a virtual machine"),
    ("kubernetes", "docker swarm"),
    ("aws", "gcp"),
    ("postgres", "mongodb"),
    ("redis", "memcached"),
    ("react", "vue"),
    ("python", "go"),
    ("java", "kotlin"),
    ("vim", "vscode"),
    ("mac", "linux for development"),
    ("unit tests", "end to end tests"),
    ("monorepo", "polyrepo"),
    ("kafka", "sqs"),
    ("nginx", "apache"),
    ("yaml", "json"),
    ("ssh keys", "passwords"),
    ("https", "http"),
    ("a b-tree index", "a hash index"),
    ("optimistic locking", "pessimistic locking"),
    ("cookies", "local storage"),
]
COMPARE_FORMS = ["{a} vs {b}", "what's the difference between {a} and {b}", "should I use {a} or {b}"]

ERRORS = [
    "TypeError: cannot read properties of undefined",
    "ModuleNotFoundError: No module named requests",
    "segmentation fault (core dumped)",
    "permission denied (publickey)",
    "ECONNREFUSED 127.0.0.1:5432",
    "java.lang.NullPointerException",
    "fatal: refusing to merge unrelated histories",
    "error: failed to push some refs",
    "CORS policy: No 'Access-Control-Allow-Origin' header",
    "OOMKilled",
    "ImagePullBackOff",
    "address already in use",
    "SSL certificate verify failed",
    "IndentationError: unexpected indent",
    "undefined is not a function",
    "cannot borrow as mutable",
    "too many open files",
    "disk quota exceeded",
    "connection timed out",
    "401 unauthorized",
]
ERROR_FORMS = ["what does '{e}' mean", "how do I fix {e}", "getting {e}, any idea why?"]

LONG_OPENERS = [
    "I'm learning to code on weekends and",
    "quick question while I wait for my build:",
    "not related to work, but",
    "for a side project of mine,",
    "my friend asked me this and I didn't know:",
    "I'm preparing for an interview and",
    "in general terms,",
]
LONG_ENDINGS = ["", " keep it short", " with an example please", " explain like I'm new to it"]


def generated() -> list[str]:
    """Every prompt the lists and templates make (before sampling)."""
    out = list(CHAT)
    out += [f.format(w=w, s=s) for f, w, s in itertools.product(CREATIVE_FORMS, CREATIVE, SUBJECTS)]
    out += [q for qs in TECH.values() for q in qs]
    out += [f.format(t=t, l=lang) for f, t, lang in itertools.product(TASK_FORMS, TASKS, LANGS)]
    out += [f.format(c=c) for f, c in itertools.product(CONCEPT_FORMS, CONCEPTS)]
    out += [f.format(a=a, b=b) for f, (a, b) in itertools.product(COMPARE_FORMS, COMPARE)]
    out += [f.format(e=e) for f, e in itertools.product(ERROR_FORMS, ERRORS)]
    tech = [q for qs in TECH.values() for q in qs]
    pick = random.Random(SEED)  # one opener and ending per question: the wrapper is not the point
    out += [f"{pick.choice(LONG_OPENERS)} {q}?{pick.choice(LONG_ENDINGS)}" for q in tech]
    return list(dict.fromkeys(out))


def corpus(exclude: set[str]) -> list[str]:
    """SIZE prompts: every hand-written one (chat, the technologies' questions), the rest sampled with
    a fixed seed from the templates' combinations; none equal to an `exclude` prompt."""
    fixed = [p for p in dict.fromkeys(CHAT + [q for qs in TECH.values() for q in qs]) if p.lower() not in exclude]
    rest = [p for p in generated() if p not in set(fixed) and p.lower() not in exclude]
    random.Random(SEED).shuffle(rest)
    return fixed + rest[: SIZE - len(fixed)]


def training_prompts() -> set[str]:
    """The training / tuning sets' prompts (lower case): the corpus must not copy any."""
    import django

    django.setup()
    from bench import adapter_study, codebase

    ours = codebase.load(extras=(codebase.TUNE_EXTRA,))
    seen = {text.lower() for _, text, _, split in codebase.prompts(ours) if split == "tune"}  # held out: unread
    for path in adapter_study.training_sets():
        seen |= {text.lower() for _, text, _, _ in codebase.prompts(codebase.load_set(str(path)))}
    return seen


def write(out: str) -> None:
    exclude = training_prompts()
    prompts = corpus(exclude)
    Path(out).write_text(
        json.dumps({"about": __doc__.split("\n\n")[1].replace("\n", " "), "prompts": prompts}, indent=0)
    )
    print(f"wrote {len(prompts)} prompts to {out}")


if __name__ == "__main__":
    write(sys.argv[1])
