"""The words that name a secret (in many languages), what links a name to its value, and the command lines
whose options are passwords: regex fragments the rules are built from."""

from __future__ import annotations

import re

from yullu_core.textnorm import fold_with_origin

from .values import _assigned_secret

_PASSWORD_IN_OTHER_LANGUAGES = (
    "mot de passe",
    "passwort",
    "kennwort",
    "contraseña",
    "contrasena",
    "senha",
    "wachtwoord",
    "lösenord",
    "adgangskode",
    "salasana",
    "hasło",
    "haslo",
    "parola",
    "heslo",
    "jelszó",
    "şifre",
    "sifre",
    "пароль",
    "парола",
    "лозинка",
    "lozinka",
    "geslo",
    "parool",
    "slaptažodis",
    "clave",
    "contrasinal",
    "mật khẩu",
    "mat khau",
    "kata sandi",
    # Malay's, Swahili's and Latvian's words (set 18: "kata laluan untuk pelayan … ialah X", "nenosiri la seva … ni X",
    # "servera parole ir X"; the English "parole" needs a value that passes the password test after it)
    "kata laluan",
    "nenosiri",
    "parole",
    # (other fillings of set 18's forms: its first run's values passed by their symbols, not by these words)
    "passord",
    "lykilorð",
    "wagwoord",
    "contrasenya",
    "رمز عبور",
    "گذرواژه",
    "fjalëkalim",
    "pasahitz",
    "cyfrinair",
    "şifrə",
    "პაროლი",
    "գաղտնաբառ",
    "পাসওয়ার্ড",
    "கடவுச்சொல்",
    "پاس ورڈ",
    "κωδικός",
    "κωδικό",
    "συνθηματικό",
    "סיסמה",
    "סיסמא",
    "كلمة المرور",
    "كلمة السر",
    "كلمة مرور",
    "पासवर्ड",
    "รหัสผ่าน",
    "пapoль",  # as the scanner sees it: folding maps the Cyrillic р, а, о that look Latin to Latin
    "パスワード",
    "密码",
    "密碼",
    "口令",
    "비밀번호",
    # (Korean's other word; `암호화`, encryption, has no value told after it: the value's test refuses its words)
    "암호",
    # Portugal's word, and French's access code
    "palavra-passe",
    "palavra passe",
    "code d'accès",
    "code d’accès",
    # Japanese in romaji (パスワード as typed on a Latin keyboard: "tesuto sābā no pasuwādo wa X desu"; set 17)
    "pasuwādo",
    "pasuwaado",
    "pasuwado",
)
_TOKEN_WORDS_IN_LANGUAGES = (
    "token",
    "jeton",
    "токен",
    "令牌",
    "トークン",
    "토큰",
    "cookie",
    "2fa seed",
    "totp seed",
    "otp seed",
    "mfa seed",
    "hmac",
    "signing key",
    "signing secret",
    "secret key",
    "api key",
    "apikey",
    "clé",
    "clave de api",
    "chiave",
    "schlüssel",
    "sleutel",
    "ключ",
    "密钥",
    "秘密鍵",
    "シークレット",
    # as they are mistyped in a hurry ("stripe secert key for the sandbox: X")
    "secert",
    "sercet",
    "secrect",
    "secrte",
    "toekn",
    "tokne",
    "api kye",
)
# English words in another language's sentence ("la password del database è X"), or with words between
# the noun and the value no English rule reads ("I set the admin password to X").
_PASSWORD_NEARBY = (
    *_PASSWORD_IN_OTHER_LANGUAGES,
    "password",
    "passwd",
    "passphrase",
    # secrets people choose like passwords: SNMP's community string, a VPN's or RADIUS' shared secret, the
    # answer to a security question
    "community string",
    "shared secret",
    # (an IPsec VPN's pre-shared key, told as a password is: secrets16's probing)
    "pre-shared key",
    "preshared key",
    "pre shared key",
    "security answer",
    "secret answer",
    "security question answer",
    # SNMP's community named by its version or role ("snmp v2c community on the core switches: X"; set 17)
    "snmp community",
    "v1 community",
    "v2c community",
    "read community",
    "write community",
)


def _words(words: tuple[str, ...]) -> tuple[str, str, tuple[str, ...]]:
    """An alternation of `words`, their first letters (a lookahead that lets re skip most positions)
    and the keywords that wake the rule, all spelled as the scanned view spells them (folded: a Greek
    or Cyrillic word has letters that fold to Latin look-alikes)."""
    folded = tuple(fold_with_origin(w)[0].lower() for w in words)
    return "|".join(re.escape(w) for w in folded), "".join(sorted({w[0] for w in folded})), folded


_TOKEN_WORDS, _TOKEN_WORD_INITIALS, _TOKEN_KEYWORDS = _words(_TOKEN_WORDS_IN_LANGUAGES)
_PASSWORD_WORDS, _PASSWORD_INITIALS, _PASSWORD_KEYWORDS = _words(_PASSWORD_IN_OTHER_LANGUAGES)
_NEARBY_WORDS, _NEARBY_INITIALS, _NEARBY_KEYWORDS = _words(_PASSWORD_NEARBY)
# A word between a linking verb and the value: "the prod redis pw is literally X", "the key is currently X".
_ADVERB = (
    r"(?:now|still|just|literally|actually|currently|simply|really|basically|always|also|again|temporarily"
    r"|(?:set|changed|reset) to)"
)
# "is", "ist", "est", "set to", ":", "=": between a secret's name and its value, in the languages of the
# PIN and passphrase rules.
_LINKING = (
    # (a whole word: "la password deve essere lunga …" has no "es" in it)
    # (Japanese's topic particle in romaji: "anshō bangō wa 5611 desu"; set 17)
    rf"(?:\s(?:is|was|are|ist|est|es|é|è|wa)\b(?:\s+{_ADVERB})?"
    r"|\s(?:set|changed|reset) to|[:=：])"
)
# Names of a PIN or a numeric code (`PIN` in capitals is read apart, and "pin" in lower case, a wire or a
# version pin too, needs a verb or a colon).
_PIN_NAMES = (
    "pin code",
    "pin-code",
    "pincode",
    "pin number",
    "passcode",
    "pass code",
    "unlock code",
    "door code",
    "alarm code",
    "gate code",
    "keypad code",
    "lock code",
    "safe code",
    # an alarm panel's codes: "disarm with <digits>", "the duress code is <digits>" (secrets13's set)
    "disarm",
    "duress code",
    "arming code",
    # a PIN named by what it opens, in small letters ("voicemail pin 7731"; secrets17's probing)
    "voicemail pin",
    "sim pin",
    "atm pin",
    "bank pin",
    "card pin",
    "debit pin",
    "phone pin",
    "code pin",
    "código pin",
    "codigo pin",
    "codice pin",
    "geheimzahl",
    "пин-код",
    "пин",
    "暗証番号",
    # (the same in romaji; set 17)
    "anshō bangō",
    "anshou bangou",
    "ansho bango",
    "密码",
)
_PIN_WORDS, _PIN_INITIALS, _PIN_KEYWORDS = _words(_PIN_NAMES)

# A value told in a sentence: six or more characters, not ending in the sentence's punctuation.
# (Chinese, Japanese and Korean text has no spaces: a value ends at their letters and punctuation, so
# "パスワードは12文字以上です" tells a length, "数据库密码是Marmot57$copper60" a password)
_CJK = "\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af"
_TOLD_VALUE = rf"[^\s\"'`{_CJK}]{{5,}}[^\s\"'`.,;:){_CJK}]"
# "the password is X", "PW for the NAS: X", "the admin pw for grafana was changed to X": a linking verb
# or a colon after the noun, with a few words between (not a sentence's end or an assignment, which
# secret-assignment reads when the name is one word).
_TOLD_VERB = (
    # (a host's dots do not end the gap: "the password for db.prod is X"; secrets12)
    r"(?:[^.\n=:]|\.(?=\w)){0,40}?"
    rf"(?:(?:\s(?:(?:is|was|are|were|has been)(?:\s+{_ADVERB})?|(?:set|changed|reset) to)"
    # "PW for the NAS: X", "token for CI: X", "AES-128 key used by the legacy export = X" (a name of words
    # before `=`, which secret-assignment does not read)
    r"|:|\s=)\s+"
    # (Chinese and Japanese copulas, spaced or not: "AccessKey Secret 是 X", "APIキーはX")
    r"|\s*(?:是|为|為|は)\s*)"
    rf"[\"'`「『]?({_TOLD_VALUE})"
)
# "the password policy is NIST-800-63b": the sentence is about something else of passwords.
_ABOUT = (
    r"(?!\s+(?:polic|length|reset|hash|rule|field|manager|flow|requirement|strength|complexity|format|valid"
    r"|expir|rotation|hint|prompt|input|check|min|max|storage|protect|encrypt|scope|permission|lifetime|ttl"
    r"|ids?\b|fingerprint))"
)
_TOKEN_NOUN = (
    # (the lookahead lets re skip most positions at once: a third of this rule's time on long texts)
    r"(?=[abcdilprst])"
    r"(?:(?:auth|access|api|bot|refresh|session|bearer|deploy|license|app|client|service|integration)[ _-]?"
    r"(?:token|key|secret)|client[ _-]?secret|secret[ _-]?key|secret|token|personal[ _-]access[ _-]token|pat"
    # a VPN's pre-shared key
    r"|psk|pre[ _-]?shared[ _-]?key)"
)
# A short option that is a password after a `login` subcommand (docker, podman, helm registry, oc, cf,
# az …) and for sshpass (`-p` is a port for docker run and ssh), `-a` for redis-cli.
_PASSWORD_SHORT_OPTION = (
    r"(?i)\b(?=[ls])(?:login|sshpass)"
    r"\b[^\n|;&]{0,120}?\s-p[= ]?['\"]?([^\s'\"]{4,})"
    r"|\b(?=r)redis-cli\b[^\n|;&]{0,120}?\s-a\s+['\"]?([^\s'\"]{4,})"
    # OpenLDAP's tools take the bind password as `-w`; mongo's shell as `-p`
    r"|\b(?=l)ldap\w+\b[^\n|;&]{0,160}?\s-w\s+['\"]?([^\s'\"]{4,})"
    r"|\b(?=m)mongo(?:sh)?\b[^\n|;&]{0,120}?\s-p\s+['\"]?([^\s'\"]{4,})"
)
# Clients whose option or argument is a password or a token: (command, option) as regexes; the value
# follows the option after a space, an `=` or glued on (7-Zip's `-pX`), quoted or not.
_CLIENT_PASSWORD_OPTIONS = (
    (r"sqlcmd|bcp|osql", r"-P\s+"),
    (r"keytool", r"-(?:src|dest)?(?:storepass|keypass)\s+"),
    (r"ssh-keygen", r"-[NP]\s+"),
    (r"7za?|7zz", r"-p"),
    (r"zip|unzip|zipcloak", r"-P\s+"),
    (r"vault", r"login\s+(?:-method=token\s+)?"),
    (r"net", r"user\s+[^\s/]+\s+"),
    # (`net use Z: \\srv\share /user:DOM\name X`; not a further switch: `/persistent:no`)
    (r"net", r"/user:\S+\s+(?!/)"),
    (r"htpasswd", r"-b\w*\s+\S+\s+\S+\s+"),
    # (`openssl enc -k X`, `-K <hex key>`; not `-kfile`)
    (r"openssl", r"-[kK]\s+"),
    (r"ConvertTo-SecureString", r"(?:-String\s+)?"),
    # (set 18) Poetry's repository credentials (`poetry config http-basic.NAME USER X`, `pypi-token.NAME X`), a TOTP
    # seed given to oathtool (`oathtool --totp -b X`: its one argument is the key)
    (r"poetry", r"config\s+(?:http-basic\.\S+\s+\S+|pypi-token\.\S+)\s+"),
    (r"oathtool", r"(?:-[-\w=]+\s+)*"),
    # code signing's: Windows' `signtool sign /f c.pfx /p X`, `certutil -p X`, macOS' `security create-keychain -p X`,
    # `unlock-keychain -p X`, `import c.p12 -P X`, `add-generic-password … -w X`
    # (RabbitMQ's users: `rabbitmqctl add_user NAME X`, `change_password NAME X`; other fillings of set 17's forms)
    (r"rabbitmqctl", r"(?:add_user|change_password)\s+\S+\s+"),
    (r"signtool", r"/p\s+"),
    (r"certutil", r"-p\s+"),
    (
        r"security",
        r"(?:create-keychain|unlock-keychain|import|add-(?:generic|internet)-password)\b[^\n|;&]{0,120}?\s-[pPw]\s+",
    ),
)
_CLIENT_PASSWORD = (
    r"(?<![\w-])(?:"
    + "|".join(rf"(?:{cmd})\b[^\n|;&]{{0,160}}?\s{opt}" for cmd, opt in _CLIENT_PASSWORD_OPTIONS)
    # (not another option, nor a variable; a password may start with `-` before a digit or a symbol, `-0sMuiJSPx9P5X`,
    # where no option's name does: other fillings of sets 14's and 17's `net use`)
    + r")['\"]?((?:-(?=[\d!#%*^@+])|[^\s'\"$-])[^\s'\"]{3,})"
)
# A database shell's password after its user: `cypher-shell -u neo4j -p X`, `cqlsh … -u ops -p X`, `cbq -u Admin -p X`
# (set 18): `-p` right after `-u USER` and at most two other options is no port (`psql -U app -p 5432`, `docker run
# -u 1000 -p 8080:80` are numbers, which the value's test refuses).
_USER_THEN_PASSWORD = (
    r"(?<!\S)-u\s+['\"]?[^\s'\"-][^\s'\"]{0,63}\s+(?:--?[\w-]+\s+){0,2}?-p[= ]?['\"]?([^\s'\"$-][^\s'\"]{3,})"
)
# mysql's `-p` takes its password glued on; `-p shop` prompts and `shop` is the database, so a value
# after a space must look more like a password than a database name does (a capital or a symbol).
_MYSQL_PASSWORD = r"(?i)\b(?:mysql\w*|mariadb\w*)\b[^\n|;&]{0,120}?\s-p(?:['\"]?([^\s'\"]{4,})|\s['\"]?([^\s'\"]{4,}))"


_SMALL_WORDS_TEXT = (
    "the is a an to of and in it you your with for on be are that this not never we our should or if "
    "so do has have was what when where which who will can its them they into from by as at"
)
_SMALL_WORDS = frozenset(_SMALL_WORDS_TEXT.split())


def _no_small_words(words: str) -> bool:
    return not _SMALL_WORDS.intersection(re.split(r"[ \t,]+", words.lower()))


def _mysql_password(value: str) -> bool:
    return _assigned_secret(value) and any(c.isupper() or not (c.isalnum() or c in "_-.") for c in value)


# Which of an account's 2FA secrets a word between names ("2FA backup secret", "MFA device seed"; set twelve).
_WHICH_OTP = r"(?:backup|device|account|app|shared|setup|recovery|login|root|master)"
