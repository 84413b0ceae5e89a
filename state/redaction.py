"""Secrets out of everything people see: one redaction for reprs, errors, log lines and files.

Passwords and keys reach trident-spark in state URLs (``redis://:PASSWORD@host``,
``es://host/index?api_key=KEY``), factory settings (``password=``, ``api_key=``)
and librdkafka settings (``kafka_options={"sasl.password": ...}``). They are
needed to connect, so the objects keep them; but every repr, error message,
log record, progress line and file written for people shows ``***`` instead.
This module is that one rule, and every other module calls it:

* :func:`redact_url`     the userinfo password and secret-named query parameters of a URL;
* :func:`redact_state_url` a state URL: besides, the value of every parameter its scheme does not
                         take (a misspelled ``passwrd=`` may be a password), the schemes' parameters
                         known through :func:`register_state_url_params`;
* :func:`redact_options` the values of secret-named settings of a mapping (``kafka_options``);
* :func:`redact_text`    the same inside free text: URLs, ``name=value``, ``'name': 'value'``,
                         ``Authorization: Basic ...`` / ``Bearer ...`` / ``ApiKey ...``;
* :func:`is_secret_name` which names are secret (case-insensitive, ``.``/``-``/camelCase alike);
* :class:`RedactingFilter` and :func:`install_log_redaction`: every log record of a logger
  hierarchy redacted where it is made, whatever handlers the application configured.

The state layer imports nothing of trident_spark, so this lives here and
``trident_spark`` imports it (``trident_spark.state.redaction``).

Examples
--------
>>> redact_url("redis://:s3cret@cache:6379/0")
'redis://:***@cache:6379/0'
>>> redact_text("state es://es1:9200/wc?api_key=abc123&type=opaque is already persisted")
'state es://es1:9200/wc?api_key=***&type=opaque is already persisted'
"""

from __future__ import annotations

import logging
import re
import urllib.parse
from collections.abc import Collection, Mapping
from typing import Any

#: What a secret is shown as.
REDACTED = "***"

# A name is secret when one of its words is one of these ...
_SECRET_WORDS = frozenset({"password", "passwd", "passphrase", "pwd", "secret", "secrets",
                           "credential", "credentials"})
# ... or its last word is one of these ...
_SECRET_LAST_WORDS = frozenset({"pass", "token", "apikey", "authorization", "auth", "jaas"})
# ... or it ends with one of these word sequences (words joined by "_").
_SECRET_ENDINGS = ("api_key", "private_key", "secret_key", "access_key", "key_pem", "jaas_config",
                   "oauthbearer_config", "sasl_config", "auth_token", "api_token",
                   "password", "passwd")  # one word ending in them too: libpq's ``sslpassword``

# Placeholder words in hints ("https://USER:PASSWORD@HOST:9200") are not secrets: left as written.
_PLACEHOLDERS = frozenset({"password", "pass", "passwd", REDACTED})

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_NOT_WORD = re.compile(r"[^a-z0-9]+")


def _words(name: str) -> list[str]:
    return [w for w in _NOT_WORD.split(_CAMEL.sub("_", name).lower()) if w]


def is_secret_name(name: str) -> bool:
    """Whether a setting or URL parameter called ``name`` holds a secret.

    Case, separators (``.``, ``_``, ``-``) and camelCase do not matter: ``sasl.password``,
    ``ssl.key.password``, ``api_key``, ``apiKey``, ``access_token``, ``client_secret``,
    ``sasl.oauthbearer.client.secret``, ``sasl.jaas.config`` and ``ssl.key.pem`` are secret;
    ``key``, ``key_prefix``, ``username`` and ``sasl.mechanism`` are not.

    Examples
    --------
    >>> [is_secret_name(n) for n in ("sasl.password", "API_KEY", "clientSecret", "sasl.jaas.config")]
    [True, True, True, True]
    >>> [is_secret_name(n) for n in ("key", "key_prefix", "username", "sasl.mechanism", "max_tokens")]
    [False, False, False, False, False]
    """
    words = _words(name)
    if not words:
        return False
    if _SECRET_WORDS.intersection(words) or words[-1] in _SECRET_LAST_WORDS:
        return True
    joined = "_".join(words)
    return joined.endswith(_SECRET_ENDINGS)


def _redact_query(query: str, shown: Collection[str] | None = None) -> str:
    """The query with secret values as ``***``; with ``shown``, every value of a parameter not in it too."""
    pieces = query.split("&")
    changed = False
    for i, piece in enumerate(pieces):
        name, has_value, value = piece.partition("=")
        plain_name = urllib.parse.unquote_plus(name)
        if shown is not None and not has_value and piece and plain_name not in shown:
            pieces[i] = REDACTED  # a field without "=": it may be the secret itself
            changed = True
            continue
        secret = has_value and (is_secret_name(plain_name) or (shown is not None and plain_name not in shown))
        if secret and value.lower() not in _PLACEHOLDERS:
            pieces[i] = f"{name}={REDACTED}"
            changed = True
    return "&".join(pieces) if changed else query


def redact_url(url: str, *, shown_params: Collection[str] | None = None) -> str:
    """``url`` with its userinfo password and secret-named query parameters shown as ``***``.

    Everything else stays byte for byte as given (a URL without secrets comes back
    unchanged); the user name stays, so messages still say who connected. Text that
    is not a URL comes back unchanged, and so does a placeholder word standing for a
    password in a hint (``https://USER:PASSWORD@HOST:9200``, ``user:pass@``).

    Parameters
    ----------
    url : str
        Any URL: ``redis://:PW@host:6379/0``, ``https://user:PW@es:9200``,
        ``es://host:9200/index?api_key=KEY&type=opaque``, ``postgresql://user:PW@host/db``.
    shown_params : collection of str, optional
        The parameters whose values may be shown (unless secret-named): every other parameter's
        value is shown as ``***``, and a query field without ``=`` as ``***`` whole. None (the
        default): only secret-named parameters are redacted.

    Examples
    --------
    >>> redact_url("sqlite:///wc.db?table=t&passwrd=hunter2", shown_params={"table"})
    'sqlite:///wc.db?table=t&passwrd=***'
    >>> redact_url("redis://user:pw@cache:6379/0?prefix=wc")
    'redis://user:***@cache:6379/0?prefix=wc'
    >>> redact_url("es://es1:9200,es2:9200/wc?api_key=QUJD&type=opaque")
    'es://es1:9200,es2:9200/wc?api_key=***&type=opaque'
    >>> redact_url("sqlite:///tmp/wc.db?table=counts")
    'sqlite:///tmp/wc.db?table=counts'
    """
    if not isinstance(url, str):
        return url
    scheme_end = url.find("://")
    if scheme_end < 0:
        return url
    start = scheme_end + 3
    query_at = min((i for i in (url.find("?", start), url.find("#", start)) if i >= 0), default=len(url))
    # The userinfo ends at the last "@" before the query (a password may hold an unescaped "/");
    # without one, there is no userinfo and the authority ends at the path.
    at = url.rfind("@", start, query_at)
    head = url[:query_at]
    if at >= 0:
        user, colon, password = url[start:at].partition(":")
        if colon and password and password.lower() not in _PLACEHOLDERS:
            head = f"{url[:start]}{user}:{REDACTED}{url[at:query_at]}"
    tail = url[query_at:]
    if tail.startswith("?"):
        query, hash_, fragment = tail[1:].partition("#")
        tail = f"?{_redact_query(query, shown_params)}{hash_}{fragment}"
    return head + tail


#: The parameters each state URL scheme takes (its own and the common ones), by scheme.
_STATE_URL_PARAMS: dict[str, frozenset[str]] = {}


def register_state_url_params(scheme: str, names: Collection[str]) -> None:
    """Tell :func:`redact_state_url` which parameters ``scheme://`` state URLs take
    (``state/url.py``'s ``register_scheme`` does, for every scheme ``open_state`` knows).

    Examples
    --------
    >>> register_state_url_params("doc", ["table"])
    >>> redact_state_url("doc://x?table=t&pasword=s3cret")
    'doc://x?table=t&pasword=***'
    """
    _STATE_URL_PARAMS[scheme.lower()] = frozenset(names)


def redact_state_url(url: str) -> str:
    """A state URL as people see it: :func:`redact_url`, and the value of every parameter its
    scheme does not take shown as ``***`` (a misspelled secret, ``passwrd=``, is still a
    secret). A scheme nobody registered takes none: all its values are hidden.

    Examples
    --------
    >>> redact_state_url("nosuch://host/x?user=app&token=t")
    'nosuch://host/x?user=***&token=***'
    """
    if not isinstance(url, str):
        return url
    scheme = url.partition("://")[0].lower()
    return redact_url(url, shown_params=_STATE_URL_PARAMS.get(scheme, frozenset()))


def redact_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``options`` with the value of every secret-named key shown as ``***``.

    Other string values are redacted as text (a URL with a password in any setting);
    nested mappings are redacted too; None stays None.

    Examples
    --------
    >>> redact_options({"security.protocol": "SASL_SSL", "sasl.username": "app",
    ...                 "sasl.password": "hunter2", "ssl.key.password": "k3y"})
    ... # doctest: +NORMALIZE_WHITESPACE
    {'security.protocol': 'SASL_SSL', 'sasl.username': 'app', 'sasl.password': '***',
     'ssl.key.password': '***'}
    """
    shown: dict[str, Any] = {}
    for name, value in options.items():
        if value is not None and is_secret_name(str(name)):
            shown[name] = REDACTED
        elif isinstance(value, str):
            shown[name] = redact_text(value)
        elif isinstance(value, Mapping):
            shown[name] = redact_options(value)
        else:
            shown[name] = value
    return shown


# Free text. A URL runs to the next blank or quote; a value after "name=" to the next separator.
# (Punctuation that ends a sentence or a clause is not part of the URL: "at redis://h:1/0: ...".)
_URL = re.compile(r"\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>`]*[^\s'\"<>`.,;:!?)\]}]")
_HEADER = re.compile(
    r"(?i)(\bauthorization\b[\"']?\s*[:=]\s*[\"']?)((?:basic|bearer|apikey|token|digest|negotiate)\s+)?"
    r"([^\s\"',;}\]]+)")
_BARE_TOKEN = re.compile(r"\b(Bearer|ApiKey)\s+([A-Za-z0-9+/_.~\-]{8,}=*)")
_NAME_EQUALS = re.compile(
    r"(?<![\w.\-])(?P<name>[A-Za-z_][\w.\-]*)=(?P<value>\"[^\"]*\"|'[^']*'|[^\s&,;'\"()\[\]{}<>]*[^\s&,;:.!?'\"()\[\]{}<>])")
_QUOTED_NAME = re.compile(
    r"(?P<q>[\"'])(?P<name>[^\"'\s]+)(?P=q)(?P<sep>\s*:\s*)"
    r"(?P<value>\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'|[^\s,}\]]+)")


def _secret_value(value: str) -> str:
    """``***``, in the quotes the value had."""
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return f"{value[0]}{REDACTED}{value[0]}"
    if value.startswith('\\"'):
        return f'\\"{REDACTED}\\"'
    return REDACTED


def _named(match: re.Match[str]) -> str:
    name, value = match.group("name"), match.group("value")
    keep = match.group(0)[:match.start("value") - match.start()]
    if not is_secret_name(name) or _words(name)[-1:] == ["authorization"]:
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            # A quoted value may hold more (JSON in a string): look inside.
            return f"{keep}{value[0]}{redact_text(value[1:-1])}{value[0]}"
        return match.group(0)
    if value.strip("'\"\\").lower() in _PLACEHOLDERS:
        return match.group(0)
    return keep + _secret_value(value)


def redact_text(text: str) -> str:
    """``text`` with every secret in it shown as ``***``: for messages, log lines and files.

    Finds URLs (redacted as :func:`redact_url`); ``name=value`` pairs and
    ``'name': 'value'`` / ``"name": "value"`` items (reprs, JSON) whose name is
    secret (:func:`is_secret_name`); and ``Authorization:`` headers, ``Bearer TOKEN``
    and ``ApiKey KEY``. Plain ``name: value`` is left (it is how prose reads: "the
    server refused api_key: give ..."). Redacting twice changes nothing more.

    Examples
    --------
    >>> redact_text("state redis://:pw@h:6379/0?prefix=wc is already persisted by stream 'a'")
    "state redis://:***@h:6379/0?prefix=wc is already persisted by stream 'a'"
    >>> redact_text("KafkaSpout(kafka_options={'sasl.password': 'hunter2', 'sasl.username': 'app'})")
    "KafkaSpout(kafka_options={'sasl.password': '***', 'sasl.username': 'app'})"
    >>> redact_text("headers: Authorization: Basic ZWxhc3RpYzpzM2NyZXQ=")
    'headers: Authorization: Basic ***'
    """
    if not isinstance(text, str) or not text:
        return text
    text = _URL.sub(lambda m: redact_url(m.group(0)), text)
    text = _HEADER.sub(lambda m: f"{m.group(1)}{m.group(2) or ''}{REDACTED}", text)
    text = _BARE_TOKEN.sub(lambda m: f"{m.group(1)} {REDACTED}", text)
    text = _QUOTED_NAME.sub(_named, text)
    # ("name: value" in plain text is left: "the server refused api_key: give ..." is prose.)
    return _NAME_EQUALS.sub(_named, text)


# -- logging --------------------------------------------------------------------------------------


def redact_record(record: logging.LogRecord) -> None:
    """Redact a log record in place: its message (with its arguments) and its traceback text.

    The message is merged with its arguments only when redaction changes it, so
    records without secrets keep ``msg`` and ``args`` as logged.
    """
    try:
        message = record.getMessage()
    except Exception:  # a bad format string: the handler reports it as usual
        return
    shown = redact_text(message)
    if shown != message:
        record.msg, record.args = shown, ()
    if record.exc_info and not record.exc_text:
        record.exc_text = logging.Formatter().formatException(record.exc_info)
    if record.exc_text:
        record.exc_text = redact_text(record.exc_text)
    if record.stack_info:
        record.stack_info = redact_text(record.stack_info)


class RedactingFilter(logging.Filter):
    """A logging filter that redacts every record it sees (:func:`redact_record`) and keeps them all.

    trident-spark redacts its own records where they are made
    (:func:`install_log_redaction`); add this filter to a handler to redact the
    records of other libraries too.

    Examples
    --------
    >>> record = logging.LogRecord("app", logging.INFO, __file__, 1, "connecting to %s",
    ...                            ("redis://:pw@cache:6379/0",), None)
    >>> RedactingFilter().filter(record), record.getMessage()
    (True, 'connecting to redis://:***@cache:6379/0')
    """

    def filter(self, record: logging.LogRecord) -> bool:
        redact_record(record)
        return True


class _RedactingRecordFactory:
    """Wraps the process's log record factory: records of loggers under ``prefix`` come out redacted."""

    def __init__(self, inner: Any, prefix: str) -> None:
        self.inner = inner
        self.prefix = prefix

    def __call__(self, *args: Any, **kwargs: Any) -> logging.LogRecord:
        record: logging.LogRecord = self.inner(*args, **kwargs)
        name = record.name
        if name == self.prefix or name.startswith(self.prefix + "."):
            redact_record(record)
        return record


def install_log_redaction(prefix: str = "trident_spark") -> None:
    """Redact every record logged under the logger ``prefix`` (and its children) where it is made.

    A filter on a logger applies only to records logged on that very logger, not
    its children, and handlers belong to the application; so the redaction wraps
    the log record factory, which every record passes through, whatever handlers,
    formatters and levels are configured. Calling it again for the same prefix
    does nothing.

    Examples
    --------
    >>> install_log_redaction("doc_app")
    >>> record = logging.getLogger("doc_app.db").makeRecord(
    ...     "doc_app.db", logging.WARNING, __file__, 1, "retrying %s", ("redis://:pw@h:6379/0",), None)
    >>> record.getMessage()
    'retrying redis://:***@h:6379/0'
    """
    factory = logging.getLogRecordFactory()
    wrapped = factory
    while isinstance(wrapped, _RedactingRecordFactory):
        if wrapped.prefix == prefix:
            return
        wrapped = wrapped.inner
    logging.setLogRecordFactory(_RedactingRecordFactory(factory, prefix))


__all__ = [
    "REDACTED",
    "RedactingFilter",
    "install_log_redaction",
    "is_secret_name",
    "redact_options",
    "redact_record",
    "redact_state_url",
    "redact_text",
    "redact_url",
    "register_state_url_params",
]
