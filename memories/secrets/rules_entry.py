"""Our rules, fourth part: secrets told by what they open, with no password's name (held-out set 8): a value typed
at a prompt ("to get into the NAS type juniper.kettle.42"), one that "gets you in", one said in a chat line
("[10:42] dana: try hunter-orange-91"), a passphrase named a phrase ("the encryption phrase Correct Horse Battery
Staple Seven") and a code of digit groups ("the 2FA backup code 4827-1193", "the safe combo is 18-44-07")."""

from __future__ import annotations

import re

from yullu_core.textnorm import fold_with_origin

from .model import Rule
from .names import _NOT_A_PIN_BETWEEN
from .phrases import _capitalised_phrase, _joined_words, _passphrase, _phrase_of_words
from .shapes import _ssh_public_key
from .told import _plain_password, _random_mixed
from .values import _assigned_secret, _password_shaped

# Capitalised words ("Correct Horse Battery Staple Seven"), words, or one value of joined words.
_CAPITALISED = r"(?-i:(?:[A-Z][a-z]+[ \t]+){2,7}[A-Z][a-z]+(?:[ \t]+\d{1,4})?(?![ \t]+[A-Z]))"
_PHRASE = (
    r"[\"'`]?(" + _CAPITALISED + r"|(?:[A-Za-z0-9!#$%&*?@'-]+[ \t]+){2,7}[A-Za-z0-9!#$%&*?@'-]+"
    r"|[^\s\"'`]{8,63}[^\s\"'`.,;:!?)])"
)
_VALUE = r"[\"'`]?([^\s\"'`]{5,63}[^\s\"'`.,;:?)])"

# What a typed value opens, in the 100 characters before the verb ("to get into the NAS", "para entrar al servidor").
_ACCESS = re.compile(
    r"(?i)(?:\bget(?:s|ting)?\s+(?:into|in)\b|\blog\s?(?:in|on)|\bsign\s?in|unlock|entsperr|desbloque|déverrouill"
    r"|odblok|\baccess|zugang|acceso|accès|acesso|dostęp|\bopen|öffn|abrir|ouvrir|\bentrar|\bentrer|prompt|admin"
    r"|sudo|\bssh\b|\bvpn\b|wi-?fi|wlan|\bnas\b|router|\bsafe\b|tresor|coffre|cofre|sejf|\bdoor|panel|alarm"
    r"|keypad|console|server|servidor|serveur|serwer|\bbox\b|account|konto|cuenta|compte|conta)"
)
# A branch, a tag, an image or a version is typed too ("try release-candidate-42 on the build box").
_NOT_ACCESS = re.compile(r"(?i)\b(?:branch|tag|image|version|release|checkout|merge|build|ticket|issue|pr|command)\b")


def _typed_before(text: str) -> bool:
    line = text.rsplit("\n", 1)[-1][-100:]
    return bool(_ACCESS.search(line)) and not _NOT_ACCESS.search(line)


_DIGIT_CODE = re.compile(r"\d{4,10}|\d{2,4}(?:[- ]\d{2,4}){1,3}")


def _typed_value(value: str) -> bool:
    """A value typed at a prompt: a password, words joined as a passphrase, or a code of digits; not a version
    (`python3.11`), a date or a year."""
    if re.search(r"\d\.\d", value) or re.fullmatch(r"(?:19|20)\d\d(?:-\d\d){0,2}", value):
        return False
    if _DIGIT_CODE.fullmatch(value) or _joined_words(value.strip("'\"`")):
        return True
    return _strong_value(value) or _plain_password(value)


def _strong_value(value: str) -> bool:
    """A value that is a password wherever it is told: words joined as a passphrase, or a password's mix of
    letters, digits and a symbol (not a version, `node-18-alpine`, `python3.11`)."""
    value = value.strip("'\"`")
    if re.search(r"\d\.\d", value):
        return False
    # (three words joined are a product's or a project's name as often: "use copper-lantern-pro")
    if _joined_words(value, words_alone=4) or _password_shaped(value):
        return True
    # (words joined by one `=`, a capitalised one first: "just use `Word=word1234` for the vpn"; a setting's
    # `key=value` starts in small letters; HELD_OUT_9's leftover, secrets13)
    if value.count("=") == 1 and value[:1].isupper() and _joined_words(value.replace("=", "-"), words_alone=4):
        return True
    return _plain_password(value) and any(c in "!@#$%^&*+=?~" for c in value)


# A network name's words: an SSID, not its password ("the office wifi is Acme_Guest_2024", "is Home-Net-5G").
# A wifi's security mode or cipher, or a ticket's key: what follows "key" or "code" after a network that is no key.
_SECURITY_MODE_OR_TICKET = re.compile(r"(?i)wpa|wep|psk|\bsae\b|personal|enterprise|tkip|\A[A-Z]{2,10}-\d+\Z")
_NETWORK_WORD = re.compile(r"(?i)guest|office|corp|visitor|staff|public|home|net|wifi|wlan|iot|\d(?:\.\d)?g(?:hz)?\b")


def _folded_words(words: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    """An alternation of `words` as the scanned view spells them (folded: Cyrillic letters with Latin look-alikes
    become Latin, and a capital folds apart from its small letter: `Код` to `Koд`, `код` to `кoд`), and the keywords."""
    forms = sorted(
        {fold_with_origin(v)[0].lower() for w in words for v in (w, w.capitalize())}, key=lambda f: (-len(f), f)
    )
    return "|".join(re.escape(f) for f in forms), tuple(forms)


# A code's word (German, Spanish, French, Italian, Portuguese, Polish, Russian, Chinese) and what a code opens.
_CODE_WORDS, _CODE_WORD_KEYWORDS = _folded_words(
    (
        *("code", "kode", "zahlencode", "geheimzahl", "kombination", "código", "codigo", "combinación", "combinacion"),
        *(
            "digicode",
            "combinaison",
            "codice",
            "combinazione",
            "combinação",
            "combinacao",
            "kod",
            "szyfr",
            "kombinacja",
        ),
        *("код", "шифр", "комбинация", "密码", "密碼", "暗证号码", "號碼", "号码"),
    )
)
_OPENED_WORDS, _OPENED_KEYWORDS = _folded_words(
    (
        *("tresor", "tresors", "tür", "türe", "haustür", "alarmanlage", "caja fuerte", "puerta"),
        *("alarma", "coffre", "coffre-fort", "porte", "alarme", "cassaforte", "porta", "allarme", "cofre", "portão"),
        *("sejf", "sejfu", "drzwi", "alarmu", "сейф", "сейфа", "двери", "дверь", "сигнализации", "домофона", "保险箱"),
        *("保險箱", "门禁", "門禁", "门锁", "門鎖", "大门", "大門", "密码锁", "密碼鎖"),
        # a gate's, a padlock's and a locker's words (secrets17's set: "le code du portail est 4471")
        *("portail", "portillon", "barrière", "cadenas", "casier", "tor", "hoftor", "gartentor", "garagentor"),
        *("vorhängeschloss", "zahlenschloss", "spind", "portón", "cancela", "verja", "candado", "taquilla"),
        *("casillero", "cancello", "portone", "lucchetto", "armadietto", "cadeado", "furtka", "brama", "kłódka"),
        *("szafka", "ворота", "калитка", "замок", "шкафчик"),
    )
)
_CODE_KEYWORDS = _CODE_WORD_KEYWORDS
# (the first letters of both lists, a lookahead that lets re skip most positions at once)
_CODE_INITIALS = re.escape("".join(sorted({f[0] for f in (*_CODE_WORD_KEYWORDS, *_OPENED_KEYWORDS)})))


# A code that opens nothing, before "code for the …": "the zip code for the office is 94107", "error code for the door
# sensor".
_NOT_AN_ACCESS_CODE = re.compile(
    r"(?i)\b(?:zip|postal|post|area|error|status|exit|return|response|country|product|source|promo|discount|qr|bar"
    r"|dial|tax|sort|swift|bank|branch|routing|colou?r|item|part|fault)[ -]code\s+(?:for|to|of)\b"
)


# Where a wifi's key is written or who hands it out, in Title Case ("the wifi password is Taped Under Desk",
# "… Printed On The Router", "… On The Whiteboard"): a note about the key, not the key.
_WHERE_WRITTEN_TEXT = (
    "taped printed written stuck posted pinned sticker label labelled labeled behind under underneath beneath "
    "bottom back side front desk reception fridge wall whiteboard board router modem poster handed announced "
    "emailed texted slack channel wiki notion confluence sheet card"
)
_WHERE_WRITTEN = frozenset(_WHERE_WRITTEN_TEXT.split())
# What a sentence about a password says of it in Title Case: when it changes, how it must be typed, its state.
_SCHEDULE_TEXT = (
    "every weekly monthly daily quarterly yearly annually quarter month months week weeks year years day days hour "
    "hours disabled enabled locked pending temporary permanent strong weak long short complex simple case sensitive "
    "insensitive everywhere always never sometimes soon later today tomorrow yesterday updated unchanged valid invalid"
)
_SCHEDULE_WORDS = frozenset(_SCHEDULE_TEXT.split())


# An account's or a password's word and a change of it, before "it's now X".
_RESET_BEFORE = re.compile(
    r"(?i)\b(?:admin|root|login|account|password|passwd|pw|pwd|creds|credentials|passphrase|wi-?fi|vpn|router)\b"
    r"[^\n]{0,60}?\b(?:reset|rotated|changed|updated|new)\b"
)


# Words that make a security question's "answer" a reference to where it is kept, not the answer.
_ANSWER_REFERENCE = re.compile(r"(?i)(?:see|in|ask|stored|kept|none|n/?a|tbd|unknown|same|hashed|encrypted)\b")


RULES: tuple[Rule, ...] = (
    # "to get into the NAS type juniper.kettle.42", "Zum Entsperren des Tresors gib 4471-9920 ein", "para entrar al
    # servidor escribe Montaña.Roja.84": a verb of typing, then the value, with what it opens before.
    Rule(
        "typed-at-a-prompt",
        "a password",
        re.compile(
            r"(?i)\b(?=[teklpgsidw])(?:type|enter|key\s+in|punch\s+in|input|tippe|tippen|gib|geben|escribe|teclea"
            r"|introduce|tapez|taper|tape|saisis|saisissez|wpisz|digite|digita)\s+(?:in\s+)?" + _VALUE
        ),
        (
            "type",
            "enter",
            "key in",
            "punch in",
            "input",
            "tipp",
            "gib",
            "geben",
            "escribe",
            "teclea",
            "introduce",
            "tape",
            "saisis",
            "wpisz",
            "digit",
        ),
        check=_typed_value,
        before=_typed_before,
    ),
    # "user admin and then sunflower_Delta_77 gets you in", "takes analyst and Lemon.Curd.Tart as login", "when
    # it asks, raspberry-pie-314": the value, then what it does, or the prompt, then the value.
    Rule(
        "gets-you-in",
        "a password",
        re.compile(
            r"(?i)(?:(?<![^\s\"'`])([^\s\"'`]{6,63})[\"'`]?\s+(?:gets|will\s+get|lets|will\s+let)\s+(?:you|me|us)"
            r"\s+in\b|(?<![^\s\"'`])([^\s\"'`]{6,63})[\"'`]?\s+as\s+(?:the\s+|their\s+|its\s+)?(?:login|log-?in)\b"
            r"|\bwhen\s+(?:it|they|the\s+\w+)\s+asks?(?:\s+for\s+(?:it|one|a\s+password))?,?\s+" + _VALUE + ")"
        ),
        ("gets you in", "get you in", "lets you in", "let you in", "gets me in", "as login", "as the login", "asks"),
        check=_typed_value,
    ),
    # "sudo on build-03 takes Tr0mbone-Winter", "the vpn wants Kettle99lamp": what asks for a password, a verb of
    # asking, then a value of both cases and a digit (not "ssh takes ed25519 keys", "the login takes 30s").
    # (HELD_OUT_8's leftovers, secrets12)
    Rule(
        "asked-for-by",
        "a password",
        re.compile(
            r"(?i)\b(?=[sltvwcjbpk])(?:sudo|su|ssh|login|log-?in|sign-?in|vpn|wi-?fi|console|jumphost|jump box|bastion"
            r"|prompt|keychain|keystore)\b[^\n.;]{0,40}?\s(?:takes|wants|accepts|expects|asks for)\s+" + _VALUE
        ),
        ("takes", "wants", "accepts", "expects", "asks for"),
        check=lambda value: _plain_password(value) and not value.isupper() and not value.islower(),
    ),
    # A password alone on the line below an account's label ("db superuser (prod)" / "Walrus-Picnic-Echo-61"):
    # capitalised words joined with a number last, or a password's shape (a slug in small letters stays a name).
    # (HELD_OUT_8's leftovers, secrets12)
    Rule(
        "password-below-an-account",
        "a password",
        re.compile(
            r"(?im)^[^\n]{0,40}?\b(?:super ?user|admin|administrator|root|login|account|creds|credentials)\b"
            r"[^\n:]{0,30}\r?\n[ \t]*[\"'`]?([^\s\"'`]{8,63})[\"'`]?[ \t]*$"
        ),
        ("superuser", "super user", "admin", "root", "login", "account", "creds", "credential"),
        check=lambda value: _password_shaped(value) or _capitalised_joined(value),
    ),
    # "[10:42] dana: try hunter-orange-91", "<mike> it's pelican42! for the jenkins box", "use 'Falafel-Rocket-2024'
    # for the analytics login": a value handed over in a chat line or for a login, a password wherever it is.
    Rule(
        "handed-over",
        "a password",
        re.compile(
            r"(?im)(?:^[ \t]*(?:\[[\d:. apm]{4,12}\]|\d{1,2}:\d{2})?[ \t]*(?:<[\w.@-]{1,32}>|[\w.@-]{1,32}:)[ \t]*"
            r"(?:try|it'?s|use|pw|pass)[ \t]+" + _VALUE + r"|\b(?:try|it'?s|use)\s+" + _VALUE + r"[\"'`]?"
            r"\s+(?:for|on|to\s+get\s+into|into)\s+(?:the\s+|our\s+|my\s+|his\s+|her\s+)?(?:[\w-]+\s+){0,2}?"
            r"(?:login|log-?in|box|server|account|admin|console|vpn|wi-?fi|nas|router|machine|host)\b)"
        ),
        ("try", "it's", "its", "use", "pw", "pass"),
        check=_strong_value,
        before=lambda text: not _NOT_ACCESS.search(text.rsplit("\n", 1)[-1][-100:]),
    ),
    # "the encryption phrase Correct Horse Battery Staple Seven", "keepass master: tidal wave under copper moon",
    # "the backup drive phrase: amber.falcon.drift.nine", "key is orchard-violet-338": a phrase's or a key's name
    # without "password", then words of a passphrase. A phrase named by what it opens may be followed by its words
    # alone; a bare "phrase", "master" or "key" (a verb, a word of prose) only after a colon, or after "is" by
    # capitalised or joined words.
    Rule(
        "phrase-named",
        "a password",
        re.compile(
            r"(?i)\b(?=[a-z])(?:(?:encryption|backup|unlock|master|vault|drive|disk|wallet|archive|vpn|keepass"
            r"|bitlocker|luks|gpg|pgp|ssh|signing)\s+(?:pass\s?)?phrase(?:\s+(?:is|was))?\s*[:=]?\s+" + _PHRASE + r""
            r"|(?:phrase|master|key|code\s?word)\s+(?:is|was)\s+[\"'`]?("
            + _CAPITALISED
            + r"|[^\s\"'`]{8,63}[^\s\"'`.,;:!?)])"
            r")"
        ),
        ("phrase", "master", "key", "codeword", "code word"),
        check=lambda words: _named_phrase(words),
    ),
    # "keepass master: tidal wave under copper moon", "drive phrase: amber.falcon.drift.nine": a bare name, a colon
    # and a space, then a passphrase with none of a sentence's words ("php artisan key:generate on a fresh checkout";
    # not a phrase of language: "Key phrase: semantic search over long memories").
    Rule(
        "phrase-after-colon",
        "a password",
        re.compile(
            r"(?i)\b(?=[pmkc])(?:(?<!key )(?<!key-)(?<!search )(?<!catch )(?<!noun )(?<!verb )phrase"
            r"|master|key|code\s?word)"
            r"[ \t]*[:=][ \t]+" + _PHRASE
        ),
        ("phrase", "master", "key", "codeword", "code word"),
        check=lambda words: _strict_phrase(words),
    ),
    # "the wifi in the office is Lemon-Tree-44!": after "is", `wifi-password` reads only a quoted value, since the
    # network's name follows as often ("the office wifi is Ubiquiti-U6-Pro"); unquoted, a value that is a password
    # wherever it is told (words joined with a number, a password's mix with a symbol) or random letters and digits,
    # and none of a network name's words ("Acme_Guest_2024"). (held-out set 13)
    Rule(
        "wifi-is-a-password",
        "a password",
        re.compile(
            r"(?i)\b(?=[wW])(?:wi-?fi|wlan)\b"
            r"(?:(?!\s*(?:ssid|network|name|called|named|router|channel|band|standard|chip|card|adapter|driver|module"
            r"|mac|ip)\b)[^.\n=:;]){0,40}?\s(?:is|was)(?:\s+(?:now|still))?\s+" + _VALUE
        ),
        ("wifi", "wi-fi", "wlan"),
        check=lambda value: (
            (_strong_value(value) or _random_mixed(value.strip("'\"`"))) and not _NETWORK_WORD.search(value)
        ),
    ),
    # "the office wifi is Orchard-5G and the key is BlueHeron2024", "wifi: Orchard-5G / key: BlueHeron2024": the
    # network told first, then a key's short word (key, code, pass, pw, psk) after "and", a comma, a slash or "with",
    # and the value (set sixteen; "the office wifi is BlueHeron2024" alone stays kept: an SSID follows "is" as often).
    # Not a word of the network's own (a band, a security mode: "key type WPA2-PSK" is no value) nor a sentence's word
    # without a digit ("the wifi is down, key rotation pending").
    Rule(
        "wifi-key-after-its-network",
        "a password",
        re.compile(
            r"(?i)\b(?=[ws])(?:wi-?fi|wlan|ssid)\b[^\n]{0,60}?(?:\band\b|[,;/(]|\bwith\b)[ \t]*"
            r"(?:(?:the|its|her|his|their|our)[ \t]+)?(?:key|code|pass|pw|psk)(?:[ \t]+(?:is|was)|[ \t]*[:=]|[ \t])"
            + r"[ \t]*"
            + _VALUE
        ),
        ("wifi", "wi-fi", "wlan", "ssid"),
        check=lambda value: (
            any(c.isdigit() for c in value)
            and (_plain_password(value) or _assigned_secret(value))
            and not _NETWORK_WORD.search(value)
            and not _SECURITY_MODE_OR_TICKET.search(value)
        ),
    ),
    # "door: 5135", "Garage: 2580#", "keypad - 7731*": what a code opens, a colon or a dash, and its four to eight
    # digits alone (not a size or a count: "door: 1200 mm", "gate: 12 items"). (secrets12's probing)
    Rule(
        "code-after-what-it-opens",
        "a one-time or access code",
        re.compile(
            r"(?i)\b(?=[dgklsabp])(?:door|front door|gate|garage|keypad|key ?safe|lock ?box|locker|safe|alarm|bike lock"
            r"|padlock|lock)s?"
            r"[ \t]*(?::|-|–|—)[ \t]*(?<![\d-])(\d{4,8})[#*]?(?![\d.,-]|[ \t]*[a-z%])"
        ),
        ("door", "gate", "garage", "keypad", "safe", "lockbox", "lock box", "locker", "alarm", "lock"),
        check=lambda digits: not re.fullmatch(r"(?:19|20)\d\d", digits),
    ),
    # "the safe is 24-61-07", "the lockbox at the cabin is 4417", "keypad: 4 8 1 9", "the door to the lab opens with
    # 4-8-1-9": what a code opens, a few words, then "is", a colon or "opens with" and its digits, with no word "code"
    # (held-out set 13). Digits alone only after a thing that has nothing but a code (a safe, a keypad, a lockbox, a
    # padlock); after a door, a gate or a lock only a combination's groups of one to three digits, since "the door is
    # 2417" names a room as often. Not a size, a date, a time, nor a thing's number ("the safe's serial number is …").
    # An alarm panel has nothing but a code too ("the alarm is 5529"; secrets17, set thirteen's leftover): its digits
    # alone, unless they are a time with its leading zero ("the alarm is 0730"), a loudness or a pitch ("110 dB"). A
    # locker's only as a combination's groups ("the locker is 12-34-56"): "my locker is 214" is its number.
    Rule(
        "code-is-after-what-it-opens",
        "a one-time or access code",
        re.compile(
            # (a key box's too: "the keybox at the cabin is 3319"; secrets18's probing)
            r"(?i)\b(?=[sdgklbpca])(?:(safe|keypad|key ?safe|key ?box|lock ?box|padlock|combination lock|bike lock"
            r"|alarm(?: panel| system)?|burglar alarm)"
            r"|door|front door|gate|garage(?: door)?|lock|locker)(?:'s)?\b"
            # (where a safe or a keypad sits is no number of it: "the safe in the server room is 24-61-07"; after a
            # door or a gate, a room's or a floor's word says whose number follows: set sixteen)
            r"((?:(?!\b(?:number|no|serial|model|size|width|height|depth|weight|id|price|clock|volume|time)\b)"
            r"(?(1)|(?!\b(?:room|floor|aisle|bay|unit|terminal)\b))[^\n.;:0-9]){0,30}?)"
            r"(?:\s+(?:is|was)(?:\s+(?:now|still))?|\s*:|\s+(?:opens|unlocks|opened|unlocked)\s+with)\s+"
            # (after a door or a gate, digits alone when a keypad's `#` or `*` ends them: "the gate is 4471#")
            # (or the key's name spelled out, a year's digits too: "the garage gate opens with 1984 star"; set sixteen)
            r"(?<![\d-])(\d{1,3}(?:[- ]\d{1,3}){2,3}|\d{4,8}[ \t]+(?:star|hash|pound)\b|(?(1)\d{4,8}|\d{4,8}(?=[#*])))"
            r"(?![\d.,:/-]\d|\d|[ \t]*(?:%|mm|cm|m|kg|lbs?|in|inch|inches|ft|x|am|pm|h|hrs?|min|s|db|hz|khz|w|v)\b)"
        ),
        ("safe", "keypad", "lockbox", "lock box", "padlock", "lock", "door", "gate", "garage", "alarm", "locker")
        + ("keybox", "key box"),
        group=3,
        # (four digits or more: "the gate is 1 2 3" counts steps)
        check=lambda digits: (
            sum(c.isdigit() for c in digits) >= 4 and not re.fullmatch(r"(?:19|20)\d\d|0\d[0-5]\d", digits)
        ),
    ),
    # A lock of three dials or wheels, told its three digits ("padlock on the bike cage is 381", "the padlock: 0-3-7",
    # "the suitcase lock is 4 0 9"; secrets17, set thirteen's leftover): a padlock's, a bike lock's, a luggage lock's or
    # a combination lock's, after "is", a colon or "opens with". A locker's three only as a dial's groups ("the locker
    # is 0-3-7"): "my locker is 214" is its number. Not a size, a price or a count ("the padlock is 40 mm", "… 120 cm").
    Rule(
        "three-digit-lock",
        "a one-time or access code",
        re.compile(
            r"(?i)\b(?=[pbclsl])(?:(padlock|bike lock|bicycle lock|cable lock|combination lock|combo lock|luggage lock"
            r"|suitcase lock|dial lock)|locker)s?(?:'s)?\b"
            r"(?:(?!\b(?:number|no|serial|model|size|width|weight|id|price|costs?)\b)[^\n.;:0-9]){0,30}?"
            r"(?:\s+(?:is|was)(?:\s+(?:now|still))?|\s*[:=]|\s+(?:opens|unlocks|opened|unlocked)\s+with)\s+"
            r"(?<![\d$€£-])((?(1)\d{3}|(?!))|\d[- ]\d[- ]\d)"
            r"(?![\d.,:/-]?\d|[ \t]*%|[ \t]*(?:mm|cm|m|g|kg|lbs?|in|inch|inches|ft|x|am|pm|h|hrs?|min|s|years?|days?"
            r"|euros?|dollars?|bucks|eur|usd|gbp|times|pieces|pcs|units)\b)"
        ),
        ("padlock", "bike lock", "bicycle lock", "cable lock", "combination lock", "combo lock", "luggage lock")
        + ("suitcase lock", "dial lock", "locker"),
        group=2,
    ),
    # A password of digits only after its name and "is" or a colon ("the printer's admin pwd is 676646"): six to
    # twelve digits, not a count or a duration ("password length is 12", "expires after 90 days"), nor a ticket's
    # or an issue's number. (secrets12's probing)
    Rule(
        "password-of-digits",
        "a password",
        re.compile(
            r"(?i)\b(?=[pk])(?:pass?(?:w(?:or|ro|r)|ow?r|or)d|passwd|pwd|pw|passcode|kennwort|passwort)s?\b"
            r"([^\n.;:=]{0,30}?)(?:\s(?:is|was)(?:\s+(?:now|still))?|[:=])\s*[\"'`]?(?<![\d-])(\d{6,12})"
            r"(?![\w-]|[.,]\d|\s*(?:%|ms\b|s\b|sec|min|hours?|days?|digits|chars|characters))"
        ),
        ("passw", "pasw", "passo", "pwd", "pw", "passcode", "kennwort"),
        group=2,
        # (not a date written as digits: "password changed: 20240115")
        check=lambda digits: not re.fullmatch(r"(?:19|20)\d\d(?:(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01]))?", digits),
        before=lambda before: not _NOT_A_PIN_BETWEEN.search(before[-40:]),
    ),
    # "use dkowalski and the phrase purple monkey dishwasher 9": "the phrase" then a passphrase's words (with a
    # number, or four words or more: `_strict_phrase`; "the phrase 'cloudflare workers pricing'" kept).
    # (HELD_OUT_8's leftovers, secrets12)
    Rule(
        "the-phrase",
        "a password",
        re.compile(r"(?i)\b(?:the|my|our|his|her|their|a)\s+(?:pass\s?)?phrase\s+(?:is\s+)?" + _PHRASE),
        ("phrase",),
        check=lambda words: _strict_phrase(words),
    ),
    # A security question's answer after its name and a colon ("security question answer for the registrar
    # account: Whiskers the Second"): the answer is a password anyone can guess from a name. Not a reference to
    # where it is kept ("…: see 1Password", "…: in the vault"). (HELD_OUT_8's leftovers, secrets12)
    Rule(
        "security-answer",
        "a password",
        re.compile(
            r"(?im)\b(?:security|secret|challenge)\s+(?:question\s+)?answers?\b[^\n:=]{0,60}[:=][ \t]*[\"'`]?"
            r"([A-Za-z0-9][\w'’.-]*(?:[ \t]+[\w'’.-]+){0,5})[\"'`]?[ \t]*$"
        ),
        ("answer",),
        check=lambda answer: len(answer) >= 4 and not _ANSWER_REFERENCE.match(answer),
    ),
    # "the 6-digit code for the front door is 482913", "the code to the storage unit: 2 4 6 8": a code named by what it
    # opens after "for" or "to", then its digits (`code-of-digits` wants "door code"). (secrets16's probing)
    Rule(
        "code-for-what-it-opens",
        "a one-time or access code",
        re.compile(
            r"(?i)\b(?:pass)?code\s+(?:for|to|of)\s+(?:the\s+|our\s+|my\s+)?(?:[\w'-]+\s+){0,3}?"
            r"(?:door|gate|garage|safe|alarm|keypad|lock ?box|locker|padlock|entrance|building|office|storage|shed"
            r"|server room|front desk)s?(?:\s+(?:is|was)(?:\s+(?:now|still))?|\s*[:=])\s*"
            r"(?<![\d-])(\d{4,10}|\d{1,4}(?:[- ]\d{1,4}){1,5})"
            r"(?![\d-]|\.\d|\s*(?:%|ms\b|s\b|sec|min|hours?|days?|digits|mm|cm|m\b))"
        ),
        ("code",),
        check=lambda digits: sum(c.isdigit() for c in digits) >= 4 and not re.fullmatch(r"(?:19|20)\d\d", digits),
        before=lambda before: not _NOT_AN_ACCESS_CODE.search(before),
    ),
    # A safe's, a door's or an alarm's code in other languages ("Der Tresor-Code lautet 4-8-1-9", "El código de la caja
    # fuerte es 24-61-07", "Le code du coffre est 24 61 07", "Код от сейфа: 24-61-07", "保险箱密码是246107"): a code's
    # word, what it opens a few words on (or joined to it), a linking word of the language or a colon, then digits.
    # (secrets16's probing)
    Rule(
        "code-in-other-languages",
        "a one-time or access code",
        re.compile(
            # (not a postal, an error's or a bar code's: "le code postal de la porte est 75011")
            rf"(?i)(?=[{_CODE_INITIALS}])(?:(?<![^\W\d_])(?:{_CODE_WORDS})(?:(?!\s*(?:postal|post|erro|error|erreur|fehler|errore|błęd|qr|barr))"
            # (a word or two after what it opens: "Le code de la porte d'entrée : 4471"; secrets17)
            rf"[^\n.;]){{0,25}}?(?:{_OPENED_WORDS})(?![^\W\d_])(?:[ \t]+[^\s\d:.;=]{{1,12}}){{0,2}}?"
            rf"|(?<![^\W\d_])(?:{_OPENED_WORDS})[ -]?(?:{_CODE_WORDS}))"
            r"(?:\s+(?:lautet|ist|es|est|è|é|e|jest|to)\s*|\s*[:：=—–-]\s*|\s*(?:是|为|為|は)\s*)"
            r"(?<![\d-])(\d{4,10}|\d{1,4}(?:[- ]\d{1,4}){1,5})"
            r"(?![\d-]|[.,]\d|[ \t]*(?:%|ms\b|s\b|sec|min|tests?\b|lines?\b|lignes?|líneas?|zeilen|mm\b|cm\b))"
        ),
        _CODE_KEYWORDS,
        check=lambda digits: sum(c.isdigit() for c in digits) >= 4 and not re.fullmatch(r"(?:19|20)\d\d", digits),
    ),
    # A padlock's three digits in other languages ("La combinación del candado es 3-8-1", "Il codice del lucchetto è
    # 381", "Das Zahlenschloss ist 381"), as `three-digit-lock` reads them in English (`code-in-other-languages` wants
    # four digits: a door's or a safe's code has them). (secrets17's probing)
    Rule(
        "three-digit-lock-in-other-languages",
        "a one-time or access code",
        re.compile(
            r"(?i)(?<![^\W\d_])(?=[clkzvfaз])(?:cadenas|candado|lucchetto|cadeado|kłódk[aię]|zahlenschloss"
            r"|vorhängeschloss|fahrradschloss|antivol|замок|замка)(?![^\W\d_])[^\n.;:0-9]{0,20}?"
            r"(?:\s+(?:lautet|ist|es|est|è|é|e|jest|to)\s*|\s*[:：=—–-]\s*)"
            r"(?<![\d$€£-])(\d{3}|\d[- ]\d[- ]\d)"
            r"(?![\d.,:/-]?\d|[ \t]*%|[ \t]*(?:mm|cm|m|g|kg|euros?|€|jahre|años|anni|ans|anos)\b)"
        ),
        ("cadenas", "candado", "lucchetto", "cadeado", "kłódk", "zahlenschloss", "vorhängeschloss", "fahrradschloss")
        + ("antivol", "замок", "замка"),
    ),
    # A dial's combination as turns: "the combination is left 24, right 61, left 07", "safe: R 12 L 40 R 7".
    # (secrets16's probing)
    Rule(
        "dial-combination",
        "a one-time or access code",
        re.compile(
            r"(?i)\b(?:combination|combo|safe|padlock|lock)\b[^\n.]{0,30}?"
            r"((?:(?:left|right|[lr])[ \t]*(?:to[ \t]+)?\d{1,2}[ \t]*[,;/-]?[ \t]*){2,}"
            r"(?:left|right|[lr])[ \t]*(?:to[ \t]+)?\d{1,2})"
            r"(?![\d.])"
        ),
        ("combination", "combo", "safe", "padlock", "lock"),
    ),
    # "The Grafana admin got reset; it's now Quartz-Harbor-71": "it's now" and a value that is a password wherever it
    # is told, after an account's or a password's word and a reset in the same few sentences. (secrets16's probing)
    Rule(
        "its-now-after-a-reset",
        "a password",
        re.compile(r"(?i)\b(?:it'?s|it\s+is|it\s+was\s+changed\s+to)\s+(?:now\s+)?" + _VALUE),
        ("it's", "its", "it is", "it was"),
        check=_strong_value,
        before=lambda text: bool(_RESET_BEFORE.search(text[-100:])) and not _NOT_ACCESS.search(text[-100:]),
    ),
    # "the 2FA backup code 4827-1193", "the safe combo is 18-44-07", "alarm disarm code: 2580", "the code they
    # texted is 552 913": a code that opens something, as digits (grouped or not).
    Rule(
        "code-of-digits",
        "a one-time or access code",
        re.compile(
            r"(?i)\b(?=[abcdeglmikprsv2])(?:(?:backup|recovery|disarm|alarm|door|gate|lock|safe|2fa|mfa|otp|sms|login"
            # (what a building's codes open: "building entry code 4417", "the intercom code is 1234#"; secrets17)
            r"|verification|one-time|access|entry|entrance|intercom|buzzer|keypad|garage|locker|padlock|lockbox"
            # (an alarm's system or panel between, a dash after: "alarm system code - 5529")
            r"|mailbox|alarm system|alarm panel)\s+codes?|combo|combination|code\s+(?:they|he|she|i|we|you)\s+"
            r"(?:texted|sent|got|gave)|puk)\b(?:[^.\n\d]{0,25}?(?:\s(?:is|was)|:|=|\s[-–—])\s*|[ \t]+)"
            r"(?<![\d-])(\d{4,10}|\d{2,4}(?:[- ]\d{2,4}){1,3})"
            r"(?![\d-]|\.\d|\s*(?:%|ms\b|s\b|sec|min|hours?|days?|digits))"
        ),
        ("code", "combo", "combination", "puk"),
        check=lambda digits: not re.fullmatch(r"(?:19|20)\d\d", digits),
    ),
    # A lock's combination named by what it opens, then its digits with no verb ("Mailbox combination 3-2-7", "locker
    # combo 3 2 7", "padlock combination 381"; walk 14's leftover, secrets18): a dial's three digits, or three groups of
    # two, after "combination" or "combo" right behind a mailbox, a locker, a padlock, a lock or a safe
    # (`code-of-digits` wants two digits a group). Not a count or a size after it ("locker combination 3 digits").
    Rule(
        "combination-of-a-lock",
        "a one-time or access code",
        re.compile(
            r"(?i)\b(?=[mlpsbg])(?:mailbox|letterbox|locker|gym locker|padlock|lock|bike lock|suitcase lock"
            r"|luggage lock|safe|gate)(?:'s)?[ \t]+(?:combination|combo)s?\b(?:\s+(?:is|was)|\s*[:=–—-])?[ \t]*"
            r"(?<![\d-])(\d[- ]\d[- ]\d|\d{3}|\d{2}[- ]\d{2}[- ]\d{2})"
            r"(?![\d.,:/-]?\d|[ \t]*(?:%|digits?|numbers?|dials?|wheels?|mm|cm|kg|years?|days?|times|tries|attempts"
            r"|characters|chars|pieces|pcs|units|dollars?|euros?)\b)"
        ),
        ("combination", "combo"),
    ),
    # A password's name then its value in quotes, no verb between ("basic auth is user 'preview' and password 'open
    # sesame 77'", walk 14's leftover, secrets18): the quotes after the name hold the value itself. The value a
    # passphrase of words, capitalised words with a number, or a password's mix of characters; not a sentence about it
    # ("password 'see the vault entry'"), a placeholder's word ("password 'changeme'") or a field's name.
    Rule(
        "password-quoted-after-its-name",
        "a password",
        re.compile(
            r"(?i)(?<![\w-])(?=[p])(?:password|passphrase|pass phrase|passwd)\s+"
            r"(?:\"([^\"\n]{4,80})\"|'([^'\n]{4,80})'|“([^”\n]{4,80})”|‘([^’\n]{4,80})’)"
        ),
        ("password", "passphrase", "pass phrase", "passwd"),
        check=lambda value: _passphrase(value) or _capitalised_phrase(value) or _strong_value(value),
    ),
    # Three capitalised words after a password's name and "is" told in small letters, in a sentence ("remember the NAS
    # login is admin and the password is Lantern Harbor Quartz"; secrets18's probing): `passphrase-of-words` wants four
    # since "Password: Rotated Every Quarter" heads a section, but a heading is capitalised from its first word, so
    # "password is" in small letters before them says a sentence tells the value. Not a sentence about it in Title Case
    # ("… is Rotated Every Quarter", "… is Taped Under Desk", "… is Case Sensitive Everywhere").
    Rule(
        "three-capitalised-words-in-a-sentence",
        "a password",
        re.compile(
            r"(?-i:(?<![\w-])(?:password|passphrase|passwd|pw)(?:[ \t]+for[ \t]+[^.\n=:,;]{1,30}?)?[ \t]+(?:is|was)"
            r"(?:[ \t]+(?:now|still))?[ \t]+[\"'`“‘]?([A-Z][a-z]{2,}[ \t]+[A-Z][a-z]{2,}[ \t]+[A-Z][a-z]{2,}))"
            r"[\"'`”’]?(?=[ \t]*(?:$|[.;,!)]))"
        ),
        ("password", "passphrase", "passwd", "pw"),
        check=lambda words: (
            _capitalised_phrase(words, number=False)
            and not (_WHERE_WRITTEN | _SCHEDULE_WORDS).intersection(words.lower().split())
        ),
    ),
    # A wifi's key of capitalised words after its name ("the wifi password is Blue Heron Sunset", "wifi key: Copper
    # Lantern Orbit"; walk 14's leftover, secrets18): after a wifi's password's or key's name, three capitalised words
    # or more, where `passphrase-of-words` wants four (three are a heading's: "Password: Rotated Every Quarter"; a
    # wifi's key has no heading). Not a sentence about it ("… is Printed On The Router", "… is Same As Last Year").
    # (the network's own name after "is", "the office wifi is Blue Heron", stays a name: no key's word)
    Rule(
        "wifi-key-of-capitalised-words",
        "a password",
        re.compile(
            r"(?i)\b(?=[wv])(?:wi-?fi|wlan|wireless|vpn)(?:[ \t]+(?:network|router|guest|office))?[ \t-]*"
            r"(?:password|passphrase|passwort|pass|key|psk)\b[^.\n=:,;]{0,30}?"
            r"(?:\s(?:is|was)(?:\s+(?:now|still))?|\s*[:=])\s*[\"'`“‘]?"
            r"(?-i:((?:[A-Z][a-z]{2,}|\d{1,4})(?:[ \t]+(?:[A-Z][a-z]{2,}|\d{1,4})){2,7}))"
            r"[\"'`”’]?(?=[ \t]*(?:$|[.;,)(!]))"
        ),
        ("wifi", "wi-fi", "wlan", "wireless", "vpn"),
        check=lambda words: (
            _capitalised_phrase(words, number=False) and not _WHERE_WRITTEN.intersection(words.lower().split())
        ),
    ),
)


def _named_phrase(words: str) -> bool:
    words = words.strip("'\"`")
    if " " in words:
        return _passphrase(words) or _capitalised_phrase(words) or _phrase_of_words(words)
    return _joined_words(words)


def _capitalised_joined(value: str) -> bool:
    """Capitalised words joined with a number last (`Walrus-Picnic-Echo-61`), as a generator writes a passphrase."""
    parts = re.split(r"[-._]", value)
    return _joined_words(value, words_alone=4) and parts[-1].isdigit() and all(p[:1].isupper() for p in parts[:-1])


def _strict_phrase(words: str) -> bool:
    words = words.strip("'\"`")
    # (an OpenSSH public key's line after "key:", `ssh-ed25519 AAAAC3Nza… deploy@ci`: its blob is public;
    # secrets12's set)
    if any(_ssh_public_key(word) for word in words.split()):
        return False
    if " " in words:
        # (three words of prose are a search or a term: 'asked as a bare phrase: "cloudflare workers pricing"')
        if len(words.split()) < 4 and not any(c.isdigit() for c in words):
            return False
        return _passphrase(words) or _capitalised_phrase(words)
    return _joined_words(words)
