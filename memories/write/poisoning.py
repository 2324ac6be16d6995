"""Memory poisoning: a memory whose text instructs the assistant instead of stating a fact.

Memories are injected into an assistant's context (hooks, build_context, retrieve_memories), so a
memory that says "ignore your previous instructions", "run curl … | sh", "send ~/.ssh to this
address" or hides text in Unicode tag characters is an attack on whoever retrieves it: any token
holder, a teammate's event file or a dream pass could plant one. `hold_reason()` names why such a
text is held; the write path stores it with `Memory.held_reason` set, which keeps it out of
retrieval and context until a person approves it in the admin (edit.approve_held).

Ordinary imperative conventions ("always run make lint before pushing", "never force-push main")
are what memories are for: the rules below look for what no convention needs: addressing the
assistant's own instructions, fetching and executing remote code, sending data or secrets to an
outside address, destroying the machine, and hidden characters. Measured on a labelled set:
bench/poisoning.py (docs/security.md).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from yullu_core.textnorm import fold

# Unicode tag characters (U+E0000..E007F) spell invisible ASCII: an instruction a reviewer cannot see.
_TAGS = re.compile("[\U000e0000-\U000e007f]")
# Bidi overrides and isolates reorder what a reviewer sees against what a model reads.
_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069]")

_DATA = (
    r"(?:data|secrets?|credentials?|tokens?|keys?|passwords?|env(?:ironment)?(?: variables?)?|\.env|"
    r"~/\.ssh|id_rsa|~/\.aws|cookies?|history|conversation|chat|prompts?|source(?: code)?|code|files?|repo(?:sitory)?|"
    r"contents?|everything|memor(?:y|ies))"
)
_ELSEWHERE = (
    r"(?:https?://|ftp://|\S+@\S+\.\w+|webhook|pastebin|ngrok|requestbin|discord\.com/api/webhooks|\d+\.\d+\.\d+\.\d+)"
)

# (reason, pattern) on the folded, lower-cased text
RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "it tells the assistant to ignore or replace its instructions",
        re.compile(
            r"\b(?:ignore|disregard|forget|override|bypass|skip)\b[\w\s,'-]{0,30}?\b(?:previous|prior|above|earlier|"
            r"preceding|all|any|your|the|system|safety|original)\b[\w\s,'-]{0,20}?\b(?:instructions?|prompts?|rules?|"
            r"guidelines?|directives?|messages?|context|guardrails?|polic(?:y|ies)|constraints?)\b"
        ),
    ),
    (
        "it tells the assistant to ignore or replace its instructions",
        re.compile(
            r"\b(?:new|updated|real|actual|hidden|secret) (?:system )?(?:instructions?|prompt|directives?)\s*:"
            r"|\byou are now (?:an?|in|the|my|free|unrestricted|dan|jailbroken)\b"
            r"|\bfrom now on,? you (?:are|will be|act as"
            r"|must (?:ignore|obey|answer|reply|respond|always (?:include|send)))\b"
            r"|\byour new (?:role|task|instructions?|goal)\b"
            r"|\b(?:developer|dan|god|jailbreak) mode\b|\bjailbreak\b|<\|?(?:system|im_start)\|?>"
            r"|\[/?(?:system|inst)\]|^\s*(?:system|assistant)\s*:"
        ),
    ),
    (
        "it tells the assistant to hide something from the user",
        re.compile(
            r"\b(?:do not|don't|never|without)\b[\w\s'-]{0,15}?\b(?:tell(?:ing)?|inform(?:ing)?|mention(?:ing)?|"
            r"reveal(?:ing)?|show(?:ing)?|alert(?:ing)?|notify(?:ing)?|ask(?:ing)?)\b[\w\s'-]{0,10}?\b(?:the )?"
            r"(?:user|human|developer|operator|anyone)\b"
            r"|\b(?:silently|secretly|quietly|covertly)\b[\w\s'-]{0,20}?\b(?:run|execute|send|upload|post|exfiltrate|"
            r"copy|delete|install|modify|add)\b"
        ),
    ),
    (
        "it tells the assistant to download and run code",
        re.compile(
            r"\b(?:curl|wget|iwr|invoke-webrequest|fetch)\b[^|;\n]{0,200}\|\s*(?:sudo\s+)?(?:ba|z|da|fi)?sh\b"
            r"|\b(?:curl|wget)\b[^|;\n]{0,200}\|\s*(?:sudo\s+)?python[0-9.]*\b"
            r"|\bbase64\s+(?:-d|--decode)\b[^|;\n]{0,100}\|\s*(?:ba|z)?sh\b"
            r"|\b(?:bash|sh)\s+-c\s+[\"']?\$\((?:curl|wget)\b"
            r"|\biex\s*\(|\binvoke-expression\b|\beval\s*\(\s*(?:atob|base64|fetch|require\(['\"]child_process)"
            r"|/dev/tcp/|\bnc\b[^\n]{0,40}\s-e\s|\bmkfifo\b[^\n]{0,60}\bnc\b"
        ),
    ),
    (
        "it tells the assistant to send data to an outside address",
        re.compile(
            rf"\b(?:send|post|upload|forward|exfiltrate|leak|transmit|copy|email|e-mail|submit|report|paste)\b"
            rf"[^\n]{{0,60}}?\b{_DATA}\b[^\n]{{0,80}}?(?:\bto\b|\binto\b|\bat\b|:)\s*[^\n]{{0,40}}?{_ELSEWHERE}"
            rf"|\b(?:curl|wget|http|requests\.post|fetch)\b[^\n]{{0,120}}(?:-d|--data(?:-binary)?|-F|--upload-file|-T|"
            rf"data=|body:)\s*[\"']?@?[^\n]{{0,40}}(?:~/\.ssh|id_rsa|\.env\b|~/\.aws|/etc/passwd|/etc/shadow|"
            rf"\$\((?:env|printenv|cat)\b|\$\{{?[a-z_]*(?:token|secret|key|password)[a-z_]*)"
            rf"|\b(?:cat|tar|zip)\b[^\n|]{{0,80}}(?:~/\.ssh|id_rsa|\.env\b|~/\.aws|credentials)[^\n]{{0,40}}\|\s*"
            rf"(?:curl|nc|wget|ssh)\b"
        ),
    ),
    (
        "it tells the assistant to destroy data or weaken the machine",
        re.compile(
            r"\brm\s+-(?:rf|fr|r\s+-f)\s+(?:--no-preserve-root\s+)?(?:/|~/?|\$home/?|\*)(?:\s|$|\*)"
            r"|\bmkfs\.|\bdd\s+if=/dev/(?:zero|random|urandom)\s+of=/dev/|:\(\)\s*\{\s*:\|:&\s*\};:"
            r"|\bchmod\s+(?:-r\s+)?777\s+/(?:\s|$)|\bsudo\s+(?:rm|chmod|chown)\s+-\w*r\w*\s+/(?:\s|$)"
            r"|\bdisable\b[\w\s-]{0,20}\b(?:firewall|antivirus|defender|selinux|2fa|mfa|audit(?:ing)?|logging)\b"
            r"|\b(?:add|append|write)\b[^\n]{0,60}\bauthorized_keys\b"
        ),
    ),
)


def hold_reason(content: str, tags: Sequence[str] = ()) -> str:
    """Why this memory must wait for a person before any assistant sees it, or "" when it need not."""
    raw = "\n".join([content, *tags])
    if _TAGS.search(raw):
        return "it hides text in invisible Unicode tag characters"
    if _BIDI.search(raw):
        return "it contains bidi control characters that reorder what a reviewer sees"
    text = fold(raw).lower()
    for reason, pattern in RULES:
        if pattern.search(text):
            return reason
    return ""
