"""Passphrases of words and passwords spelled out aloud, after a password's name."""

from __future__ import annotations

import re

from .words import _SMALL_WORDS

# Words a sentence about a password has and a passphrase of words does not: the small words of several
# languages, and what says where a password lives or what happens to it ("password: see the vault entry",
# "Password: rotated every quarter", "the wifi password: ask IT helpdesk").
_NOT_PASSPHRASE_TEXT = (
    "see ask check use used uses using via stored kept saved managed required optional empty blank unset none "
    "encoded decoded encoding hashing hash salted before after during "
    "missing hidden masked encrypted hashed rotated expired expires changed reset set same default unknown "
    "only also just any all each every per no yes but than then there here like must may might need needs "
    "please sent shared given provided generated random different new old current below above "
    "vault 1password bitwarden lastpass keepass keychain manager path file env variable config settings "
    "dashboard console portal sso ldap okta entry field value secret secrets token password passwords "
    "min max minimum maximum length characters chars digits words letters symbols "
    # what a list of accounts names ("Other passwords: grafana admin account")
    "account accounts admin administrator user users username login server servers database db prod production "
    "staging dev test service app api key keys ssh root team personal email mail system site repo repository "
    "project cluster host machine box vm instance community string "
    # German, French, Spanish, Portuguese, Italian small words ("das Passwort ist im Tresor")
    "der die das ist und mit im den dem zu auf für von nicht le la les est et de du des un une dans pour "
    "sur avec pas el los las es y del en una para con o os é do da em um uma com não il lo è di per non "
    # ("Passwort: wird beim ersten Start abgefragt", "wachtwoord: wordt bij de eerste login gevraagd")
    "wird werden wurde beim bei nach vom zum zur aus oder aber auch noch nur kein keine siehe hier dort wie als "
    "ein eine einen einem einer erst ersten au aux ce se sa son ses qui que lors al lo le se ao na no nos pelo "
    "pela della del nel alla al si het een van voor niet wordt bij op "
    # where it is written ("WLAN-Passwort: steht am Router", "wachtwoord: staat op de router")
    "am steht liegt befindet voir trouve ver está esta fica vedi sta trova staat ligt zie "
    # a rule of length in those languages ("la password è lunga almeno 12 caratteri")
    "almeno lunga lungo caratteri cifre mindestens zeichen ziffern moins caractères chiffres caracteres "
    "dígitos digitos tekens cijfers minimo mínimo deve debe muss doit moet"
)
_NOT_PASSPHRASE_WORDS = _SMALL_WORDS | frozenset(_NOT_PASSPHRASE_TEXT.split())
_PASSPHRASE_WORD = re.compile(r"[A-Za-z0-9!#$%&*?@'-]+")


def _phrase_words(words: str, most: int) -> list[str] | None:
    """The words of a run shaped like a passphrase (three to `most` words of a password's characters, twelve
    characters or more, mostly lower case), else None."""
    parts = words.split()
    if not 3 <= len(parts) <= most or len(words) < 12:
        return None
    if not all(_PASSPHRASE_WORD.fullmatch(w) for w in parts):
        return None
    # (a heading's or a name's words are capitalised: "Grafana Admin Account"; a passphrase's mostly not)
    if 2 * sum(w.islower() or w.isdigit() for w in parts) < len(parts):
        return None
    return parts


def _passphrase(words: str) -> bool:
    """Three to eight words of a passphrase ("purple monkey dishwasher lantern seven", "sunny meadow 42
    tulips"), none of them a word that makes the run a sentence about the password."""
    parts = _phrase_words(words, 8)
    return parts is not None and not any(w.lower().strip("'") in _NOT_PASSPHRASE_WORDS for w in parts)


def _phrase_of_words(words: str) -> bool:
    """A passphrase told after a phrase's name and a colon ("the unlock phrase for the HSM backup is: seven
    orange kites over the harbour"): as `_passphrase`, but small words may be among its words, up to ten, as
    long as fewer than its other words (three or more): a phrase is words of a sentence, and the colon says
    the phrase itself follows, not a sentence about it."""
    parts = _phrase_words(words, 10)
    if parts is None:
        return False
    lowered = [w.lower().strip("'") for w in parts]
    small = sum(w in _SMALL_WORDS for w in lowered)
    if any(w in _NOT_PASSPHRASE_WORDS and w not in _SMALL_WORDS for w in lowered):
        return False
    return len(parts) - small >= 3 and small < len(parts) - small


# A password read aloud or dictated ("tango seven bravo nine", "capital M mango dash four four dash river"): the
# phonetic alphabet, digits, symbols and case said as words.
_SPELLING_TEXT = (
    "alfa alpha bravo charlie delta echo foxtrot golf hotel india juliet juliett kilo lima mike november oscar papa "
    "quebec romeo sierra tango uniform victor whiskey whisky xray x-ray yankee zulu "
    "dash hyphen underscore dot period hash pound exclamation bang star asterisk dollar percent ampersand plus "
    "equals slash backslash colon tilde caret capital uppercase upper lowercase lower small caps"
)
_SPELLING_WORDS = frozenset(_SPELLING_TEXT.split())
_DIGITS_TEXT = "zero one two three four five six seven eight nine niner"
_DIGIT_WORDS = frozenset(_DIGITS_TEXT.split())
# A number's word past nine ("Velvet Lantern Orchard Ninety", held-out set 13): a generator's passphrase numbers its
# words with any number, spelled or not; a heading's words have none.
_TENS_TEXT = (
    "ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty "
    "seventy eighty ninety hundred"
)
_NUMBER_WORDS = _DIGIT_WORDS | frozenset(_TENS_TEXT.split())


def _dictated(words: str) -> bool:
    """Four or more words, most of them spelling a password out (and two or more letters or symbols, not digits
    alone: "at least eight characters, one digit" is a rule), up to the last spelled word ("…dash zulu, exactly
    like that")."""
    parts = [w for w in re.split(r"[ \t,]+", words) if w]
    spelled = [w.lower() in _SPELLING_WORDS or len(w) == 1 and w.isalnum() and w not in "ai" for w in parts]
    marks = [s or w.lower() in _DIGIT_WORDS for s, w in zip(spelled, parts, strict=True)]
    while marks and not marks[-1]:
        marks.pop()
    return len(marks) >= 4 and sum(marks) >= 0.6 * len(marks) and sum(spelled[: len(marks)]) >= 2


# A passphrase's words capitalised, as a password manager's generator writes them ("Quartz Meadow Violin 31",
# "Pelican Ruby Stone Nine"): a heading's or a name's shape elsewhere, so `_passphrase` refuses it.
_CAPITALISED_WORD = re.compile(r"[A-Z][a-z]{2,}|\d{1,4}")


def _capitalised_phrase(words: str, number: bool = True) -> bool:
    """Three to eight capitalised words (and numbers), twelve characters or more, none a word of a sentence about
    the password ("Password: See The Vault Entry"); with `number`, one of them a number or a number's word
    (a heading's words have none: "Passphrase is 'Rotated Every Quarter'")."""
    parts = words.split()
    if not 3 <= len(parts) <= 8 or len(words) < 12 or not all(_CAPITALISED_WORD.fullmatch(w) for w in parts):
        return False
    lowered = [w.lower() for w in parts]
    if any(w in _NOT_PASSPHRASE_WORDS for w in lowered) or sum(w.isalpha() for w in lowered) < 2:
        return False
    return not number or any(w.isdigit() or w in _NUMBER_WORDS for w in lowered)


def _four_capitalised(words: str) -> bool:
    """Four to eight capitalised words with no number, after a password's name and "is" ("Correct Horse Battery
    Staple"): three are a heading's ("Rotated Every Quarter"), and none may say where it lives ("See The Vault
    Entry")."""
    return len(words.split()) >= 4 and _capitalised_phrase(words, number=False)


# The articles and prepositions of French, Spanish, Portuguese, Italian, German and Dutch, which a passphrase of
# capitalised words in those languages holds ("Soleil Levant Sur Paris", "Luna Azul Sobre Madrid"), and the words
# of a rule or a schedule told in Title Case ("Changement Obligatoire Tous Les Trois Mois").
_FOREIGN_SMALL_TEXT = (
    "le la les de du des sur sous dans en et au aux un une à par vers chez el los las del al y sobre con sin bajo "
    "entre o os a as do da dos das no na em e com il lo gli i della dello dei degli sul sulla nel nella di su tra "
    "fra der die das dem den des und über unter im am auf vom zum zur mit bei het van op een met"
)
_FOREIGN_RULE_TEXT = (
    "mois jours jour semaine semaines ans tous toutes chaque obligatoire requis oublié oublie réinitialisation "
    "changement cada días dias meses obligatorio todos todas alle jeden tage monate pflicht ogni giorni mesi "
    "obbligatorio todos dias meses obrigatório obrigatorio elke dagen maanden verplicht "
    # (a heading of a policy: "Politique De Sécurité Des Comptes")
    "politique sécurité securite compte comptes règle règles regle regles gestion política politica seguridad "
    "cuenta cuentas reglas gestión sicurezza regole gestione sicherheit richtlinie richtlinien konto konten regeln "
    "verwaltung segurança seguranca conta contas regras gestão beveiliging beleid regels"
)
_FOREIGN_SMALL_WORDS = frozenset(_FOREIGN_SMALL_TEXT.split())
_FOREIGN_RULE_WORDS = frozenset(_FOREIGN_RULE_TEXT.split())
_TITLE_WORD = re.compile(r"[A-ZÀ-ÖØ-Þ][a-zß-öø-ÿ]+|\d{1,4}")


# What a heading of three words says in those languages ("Cambio De Clave", "Mot De Passe", "Gestion Des Accès",
# "Recuperar La Contraseña"): a password's own name, what is done to one, who has one or where it is kept. Three
# capitalised words with a small one between are a passphrase only without them.
_FOREIGN_HEADING_TEXT = (
    "mot passe contraseña contrasena clave claves senha senhas palavra passwort kennwort wachtwoord parola hasło "
    "haslo cambio cambiar changer modifier modification ändern änderung wechsel cambiare modifica mudar alterar "
    "alteração alteracao wijzigen restablecer réinitialiser reinitialiser recuperar récupérer recuperer recupero "
    "recuperação zurücksetzen herstellen acceso accès acces accesso acesso zugang toegang usuario usuarios "
    "utilisateur utilisateurs benutzer utente utenti usuário usuario gebruiker coffre tresor cofre cassaforte kluis "
    "olvidado olvidada oublié vergessen dimenticata esqueci vergeten nuevo nueva nouveau nouvelle neues neu nuovo "
    "nuova novo nova nieuw nieuwe ver voir siehe vedi zie inicio connexion anmeldung identifiant identifiants "
    "sesión sesion session datos données daten dati dados gegevens "
    # (who to ask: "contraseña: Pregunta Al Jefe")
    "pregunta preguntar pregunte pide pedir demandez demander demande fragen frag chiedi chiedere chiedete pergunte "
    "perguntar pergunta vraag vragen"
)
_FOREIGN_HEADING_WORDS = frozenset(_FOREIGN_HEADING_TEXT.split())


def _capitalised_with_small_words(words: str) -> bool:
    """Four to eight capitalised words in another language, its articles and prepositions capitalised among them
    ("Soleil Levant Sur Paris", set thirteen's leftover, secrets17): three words of their own or more, more than the
    small ones, neither first nor last small, and none a word of a sentence about the password ("Voir Le Coffre").
    Or three, a small one between two of their own, none a heading's word ("contraseña: Sol De Invierno", walk 14's
    leftover, secrets18; "Règles De Sécurité", "Cambio De Clave" are headings)."""
    parts = words.split()
    three = len(parts) == 3
    if (
        not 3 <= len(parts) <= 8
        or len(words) < (12 if three else 15)
        or not all(_TITLE_WORD.fullmatch(w) for w in parts)
    ):
        return False
    lowered = [w.lower() for w in parts]
    if lowered[0] in _FOREIGN_SMALL_WORDS or lowered[-1] in _FOREIGN_SMALL_WORDS:
        return False
    if any(w in _FOREIGN_RULE_WORDS or w in _NOT_PASSPHRASE_WORDS and w not in _FOREIGN_SMALL_WORDS for w in lowered):
        return False
    if three:
        return lowered[1] in _FOREIGN_SMALL_WORDS and not any(
            w in _FOREIGN_HEADING_WORDS or w.isdigit() for w in lowered
        )
    small = sum(w in _FOREIGN_SMALL_WORDS for w in lowered)
    own = sum(w not in _FOREIGN_SMALL_WORDS and not w.isdigit() for w in lowered)
    return own >= 3 and own > small


# Words joined into one passphrase ("juniper.kettle.42", "glacier-thimble-orchid-ramp", "Walrus-Picnic-Echo-61"): a
# slug's and a branch's shape too, so three words or more, or two and a number of two digits or more last
# ("hunter-orange-91", not "release-candidate-3" nor "node-18-alpine").
# (the number last also right after a last word in small letters: `Raven-igloo4855`, secrets12's set; not after
# capitals, a standard's name: `HMAC-SHA512`, `AES-GCM256`)
_JOINED = re.compile(
    r"[^\W\d_]{3,12}(?:([-._])[^\W\d_]{3,12})(?:\1[^\W\d_]{3,12}){0,4}(?:\1\d{2,4}|(?<=[a-z])\d{2,4})?"
)


def _joined_words(value: str, words_alone: int = 3) -> bool:
    """Words joined as a passphrase: `words_alone` words or more, or two or more and a number last."""
    if not _JOINED.fullmatch(value):
        return False
    parts = [p for p in re.split(r"[-._]|(?<=[^\W\d_])(?=\d+$)", value) if p]
    words = [p for p in parts if not p.isdigit()]
    if any(w.lower() in _NOT_PASSPHRASE_WORDS or w.lower() in _TECH_WORDS for w in words):
        return False
    return len(words) >= words_alone or parts[-1].isdigit()


# Words of names in code, builds and infrastructure ("feature-login-flow", "eu.west.cluster", "api.v2.handler").
_TECH_TEXT = (
    "feature fix hotfix bugfix release candidate main master develop branch build node alpine slim "
    "python java docker image tag version beta alpha stable nightly latest canary web api app core utils "
    "lib libs util common service services handler client cluster region zone west east north south "
    "central internal external public private local remote cache queue worker workers http https www com "
    "org net io json yaml html css src dist test tests spec docs readme config settings index views "
    "models controller module package plugin "
)
_TECH_WORDS = frozenset(_TECH_TEXT.split())
