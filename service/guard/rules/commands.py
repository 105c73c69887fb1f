"""Credentials on command lines and in the tools' own files: CLI flags, SQL, Redis, LDAP, pgpass, netrc."""

from __future__ import annotations

import re
from collections.abc import Iterator

from service.guard.rules.core import Rule, regex_rule
from service.guard.rules.names import assignment_value_ok, keyed_value, sensitive_key
from service.guard.rules.prose_values import prose_key_value, prose_password_value, prose_value
from service.guard.rules.shapes import PASSWORD_HASH, PLACEHOLDER_WORDS, URL, Span, low_entropy, mixed

__all__ = ["RULES"]

_CLI_PLACEHOLDERS = PLACEHOLDER_WORDS | {
    "test",
    "changeit",
    "changeme",
    "secret123",
    "username",
    "user",
    "option",
    "options",
    "flag",
    "flags",
    "argument",
    "arguments",
    "parameter",
    "parameters",  # prose about flags
}


def _cli_check(m: re.Match[str], secret: str) -> bool:
    # curl -u 'test:test', curl -u <user:password>, curl --user neo4j:[PASSWORD]: documentation, not a login.
    if m.groupdict().get("s_key") is not None and not (mixed(m, secret) and not low_entropy(secret)):
        return False  # curl -u elastic: -- a user name alone (curl asks for the password), not a key
    return (
        secret.lower() not in _CLI_PLACEHOLDERS
        and secret[0] not in "<[{"
        and secret[-1] not in ">]}"
        and not URL.match(secret)  # --passphrase file://path: where the value is, not the value
    )


def _sql_password_check(m: re.Match[str], secret: str) -> bool:
    if secret.lower() in PLACEHOLDER_WORDS or PASSWORD_HASH.fullmatch(secret):
        return False
    said = m.group(0)
    if said[:10].lower() != "identified" or said.startswith("IDENTIFIED"):
        return True
    # A lowercase "identified by 'x'" is SQL only inside a user statement ('app'@'%', CREATE USER, GRANT ... TO).
    before = m.string[max(0, m.start() - 160) : m.start()].lower()
    return "'@'" in before or "user " in before or " to " in before


# SQL rows: INSERT INTO t (id, username, password) VALUES (1, 'etl', 'v'), (...): the value under a credential's
# column; and a settings table's (name, value) row whose name is a credential's ('twilio_auth_token', 'v').
_SQL_INSERT = re.compile(
    r"(?i:insert[ \t]{1,8}+into)[ \t]{1,8}+(?P<table>[^\s(]{1,128}+)[ \t]{0,8}+\((?P<cols>[^()]{1,1024}+)\)[ \t\r\n]{0,64}+"
    r"(?i:values)[ \t\r\n]{0,64}+"
)


_SQL_TUPLE = re.compile(r"[ \t\r\n,]{0,64}+\((?P<vals>(?:'(?:[^'\\]|''|\\.){0,512}+'|\w{1,64}+\(\)|[^'()]){1,4096}+)\)")


_SQL_VALUE = re.compile(r"[ \t]{0,64}+(?:'(?P<q>(?:[^'\\]|''|\\.){0,512}+)'|(?P<u>[^,']{0,256}+))[ \t]{0,64}+(?:,|$)")


_SQL_MAX_ROWS = 100_000


def _sql_cells(vals: str, offset: int) -> list[tuple[str, int, int, bool]]:
    """A VALUES tuple's cells: (text, start, end, quoted)."""
    cells: list[tuple[str, int, int, bool]] = []
    pos = 0
    while pos <= len(vals):
        m = _SQL_VALUE.match(vals, pos)
        if m is None or m.end() == pos:
            break
        group = "q" if m.group("q") is not None else "u"
        a, b = m.span(group)
        cells.append((m.group(group), offset + a, offset + b, group == "q"))
        pos = m.end()
    return cells


def _find_sql_rows(text: str) -> Iterator[Span]:
    """Credentials in INSERT rows: under a credential's column, or beside a credential's name in (name, value)."""
    for m in _SQL_INSERT.finditer(text):
        cols = [c.strip().strip('`"[]').lower() for c in m.group("cols").split(",")]
        keyed = [i for i, c in enumerate(cols) if sensitive_key(c)]
        # A table of credentials (api_keys, tokens, secrets): its bare "key" or "value" column holds them.
        table = m.group("table").strip('`"[]').rpartition(".")[2].lower()
        noun = table[:-1] if table.endswith("s") else table
        if sensitive_key(noun):
            keyed += [i for i, c in enumerate(cols) if c in ("key", "value") and i not in keyed]
        names = [noun if c in ("key", "value") else c for c in cols]
        pair = next(
            ((cols.index(n), cols.index("value")) for n in ("name", "key") if n in cols and "value" in cols), None
        )
        if not keyed and pair is None:
            continue
        pos = m.end()
        for _ in range(_SQL_MAX_ROWS):
            t = _SQL_TUPLE.match(text, pos)
            if t is None:
                break
            pos = t.end()
            cells = _sql_cells(t.group("vals"), t.start("vals"))
            if len(cells) != len(cols):
                continue
            for i in keyed:
                value, a, b, quoted = cells[i]
                if quoted and keyed_value(names[i], value):
                    yield a, b
            if pair is not None:
                key_cell, value_cell = cells[pair[0]], cells[pair[1]]
                if key_cell[3] and value_cell[3] and keyed_value(key_cell[0], value_cell[0]):
                    yield value_cell[1], value_cell[2]


def _netrc_check(m: re.Match[str], secret: str) -> bool:
    # "default login anonymous password me@site": anonymous FTP asks for an e-mail address, not a secret.
    if m.group("login").lower() in ("anonymous", "ftp"):
        return False
    return _cli_check(m, secret) and assignment_value_ok(secret, quoted=True, password=True)


RULES: tuple[Rule, ...] = (
    # SQL: CREATE/ALTER USER|ROLE ... PASSWORD 'value', MySQL's IDENTIFIED BY 'value'.
    Rule(
        "sql_password",
        regex_rule(
            r"(?i:(?<![A-Za-z0-9_])(?:identified[ \t]{1,8}+by"
            r"|(?:create|alter)[ \t]{1,8}+(?:user|role)[ \t]{1,8}+[^\s;']{1,128}+(?:[ \t]{1,8}+[a-z_]{1,32}+){0,6}?"
            r"[ \t]{1,8}+password))[ \t]{1,8}+'(?P<s>[^'\s]{4,256}+)'",
            # Oracle takes the password unquoted: CREATE USER x IDENTIFIED BY <password>
            r"(?<![A-Za-z0-9_])IDENTIFIED[ \t]{1,8}+BY[ \t]{1,8}+(?P<s_bare>[A-Za-z][A-Za-z0-9_#$]{5,127}+)(?![\w'\"])",
            check=lambda m, s: prose_password_value(s) if m.groupdict().get("s_bare") else _sql_password_check(m, s),
        ),
        anchors=(r"'(?<=[Dd][ \t]')", r"'(?<=[Yy][ \t]')", "IDENTIFIED"),
    ),
    Rule("sql_row_credential", _find_sql_rows, anchors=("values", "VALUES", "Values")),
    # Credentials on a command line: curl/wget/httpie `-u user:pass`, `--user user:pass`, `--password value`.
    Rule(
        "cli_password",
        regex_rule(
            r"(?<![\w-])(?:-u|--user|--basic-auth)(?:[ \t]{1,4}+|=)['\"]?[^\s:'\"$]{0,64}+:['\"]?"
            r"(?P<s>[^\s'\"`$]{3,255}[^\s'\"`$,.;:)\]}])",
            # -u KEY: -- an API key as the user name, the password left empty (Stripe, Elasticsearch, Mailgun)
            r"(?<![\w-])(?:-u|--user)(?:[ \t]{1,4}+|=)['\"]?(?P<s_key>[A-Za-z0-9_\-!@#%^&*+=./]{8,128}+):['\"]?(?![^\s'\"])",
            r"(?<![\w-])--(?:password|passwd|pass)(?:[ \t]{1,4}+|=)['\"]?(?P<s>[^\s'\"`$-][^\s'\"`$]{2,254}[^\s'\"`$,.;:)\]}])",
            # docker login [-u user] -p VALUE (podman, helm registry login, ...). A secret never ends on punctuation.
            r"(?<![\w-])(?:login|mongo|mongosh|mongodump|mongorestore|mongoexport|mongoimport)"
            r"(?:[ \t]{1,4}+[^\s|;&]{1,256}+){0,6}?[ \t]{1,4}+-p(?:[ \t]{1,4}+|=)['\"]?"
            r"(?P<s_p>[^\s'\"`$-][^\s'\"`$]{2,254}[^\s'\"`$,.;:)\]}])",
            # sshpass -p VALUE, redis-cli -a VALUE, and mysql's attached -pVALUE
            r"(?<![\w-])(?:sshpass[ \t]{1,4}+-p|redis-cli(?:[ \t]{1,4}+[^\s|;&]{1,256}+){0,6}?[ \t]{1,4}+-a)"
            r"[ \t]{0,4}+['\"]?(?P<s_sp>[^\s'\"`$-][^\s'\"`$]{2,254}[^\s'\"`$,.;:)\]}])",
            r"(?<![\w-])mysql(?:dump|admin|import|check)?(?:[ \t]{1,4}+[^\s|;&]{1,256}+){0,8}?[ \t]{1,4}+-p['\"]?"
            r"(?P<s_my>[^\s'\"`$-][^\s'\"`$]{2,254}[^\s'\"`$,.;:)\]}])",
            # SQL Server's sqlcmd / bcp / osql -P VALUE, and Windows' net use ... /user:NAME VALUE
            r"(?<![\w-])(?:sqlcmd|bcp|osql)(?:[ \t]{1,4}+[^\s|;&]{1,256}+){0,8}?[ \t]{1,4}+-P[ \t]{1,4}+['\"]?"
            r"(?P<s_sq>[^\s'\"`$-][^\s'\"`$]{2,254}[^\s'\"`$,.;:)\]}])",
            r"(?<![\w-])(?i:net[ \t]{1,4}+use)[^\r\n]{0,256}?[ \t]/user:[^\s]{1,128}+[ \t]{1,4}+"
            r"(?P<s_nu>[^\s'\"`$/*-][^\s'\"`$]{2,254}[^\s'\"`$,.;:)\]}])",
            # PowerShell: ConvertTo-SecureString "VALUE" -AsPlainText -Force
            r"ConvertTo-SecureString[ \t]{1,8}+(?:-String[ \t]{1,8}+)?(?P<q>['\"])(?P<s_ps>[^'\"\r\n$]{1,256}+)(?P=q)"
            r"[ \t]{1,8}+-AsPlainText",
            # htpasswd -b[c] FILE USER VALUE, htpasswd -nb USER VALUE: the password on the command line
            r"(?<![\w-])htpasswd(?:[ \t]{1,4}+-[A-Za-z]{1,8}+)*?[ \t]{1,4}+-(?P<hf>[A-Za-z]{0,7}b[A-Za-z]{0,7})"
            r"(?:[ \t]{1,4}+-[A-Za-z]{1,8}+)*+(?:[ \t]{1,4}+(?P<ha>[^\s\-|;&][^\s|;&]{0,255}+)){1,2}?"
            r"[ \t]{1,4}+['\"]?(?P<s_ht>[^\s'\"`$-][^\s'\"`$]{2,254}[^\s'\"`$,.;:)\]}])['\"]?(?=[ \t]*+(?:$|[\r\n|;&]))",
            # openssl -k VALUE; 7z/rar -pVALUE; zip/unzip -P VALUE; keytool -storepass/-keypass VALUE; gpg --passphrase
            r"(?<![\w-])openssl(?:[ \t][^\r\n|;&]{0,256}?)?[ \t]-k[ \t]{1,4}+['\"]?"
            r"(?P<s_ossl>[^\s'\"`$-][^\s'\"`$]{2,254}[^\s'\"`$,.;:)\]}])",
            r"(?<![\w-])(?:7z|7za|7zr|rar|unrar)(?:[ \t][^\r\n|;&]{0,256}?)?[ \t]-p['\"]?"
            r"(?P<s_7z>[^\s'\"`$-][^\s'\"`$]{2,254}[^\s'\"`$,.;:)\]}])",
            r"(?<![\w-])(?:zip|unzip|zipcloak)(?:[ \t][^\r\n|;&]{0,256}?)?[ \t]-P[ \t]{1,4}+['\"]?"
            r"(?P<s_zip>[^\s'\"`$-][^\s'\"`$]{2,254}[^\s'\"`$,.;:)\]}])",
            r"(?<![\w-])-(?:storepass|keypass|srcstorepass|deststorepass|srckeypass|destkeypass)[ \t]{1,4}+['\"]?"
            r"(?P<s_kt>[^\s'\"`$-][^\s'\"`$]{2,254}[^\s'\"`$,.;:)\]}])",
            r"(?<![\w-])--passphrase(?:[ \t]{1,4}+|=)['\"]?(?P<s_gpg>[^\s'\"`$-][^\s'\"`$]{2,254}[^\s'\"`$,.;:)\]}])",
            # echo VALUE | sudo -S ...: sudo reads the password from the pipe
            r"(?<![\w-])echo[ \t]{1,4}+(?P<q2>['\"]?)(?P<s_su>[^\s'\"`$|][^\s'\"`|]{2,254}+)(?P=q2)[ \t]{0,4}+\|[ \t]{0,4}+"
            r"sudo[ \t]{1,4}+(?:-[A-Za-z]{1,4}+[ \t]{1,4}+)*?-[A-Za-z]{0,3}S",
            check=_cli_check,
        ),
        anchors=(
            "htpasswd",
            r"\|[ \t]{0,4}sudo[ \t]",
            r"-k(?<=[ \t]-k)",
            r"-(?:storepass|keypass|srcstorepass|deststorepass|srckeypass|destkeypass)",
            "--passphrase",
            r"-u[ \t=]",
            r"--user[ \t=]",
            r"--basic-auth[ \t=]",
            "--pass",
            r"-p(?<=[ \t]-p)",
            r"-a(?<=[ \t]-a)",
            r"-P(?<=[ \t]-P)",
            r":(?<=/user:)",
            "ConvertTo-SecureString",
        ),
    ),
    # An LDAP client's bind password as its config files write it: ldap.conf / nslcd.conf ``bindpw VALUE``,
    # slapd.conf ``rootpw VALUE``, sssd.conf ``ldap_default_authtok = VALUE``. A stored hash ({SSHA}...) is not one.
    Rule(
        "ldap_password",
        regex_rule(
            r"(?m)^[ \t]{0,16}+(?:bindpw|rootpw|ldap_default_authtok|ldap_bind_pw|bind_pw|BINDPW|ROOTPW|LDAP_DEFAULT_AUTHTOK|BIND_PW)(?:[ \t]{0,8}+[=:][ \t]{0,8}+|[ \t]{1,8}+)"
            r"(?P<q>['\"]?)(?P<s>[^\s'\"{][^\s'\"]{2,255}+)(?P=q)[ \t]{0,8}+\r?$",
            check=lambda _m, s: assignment_value_ok(s, quoted=True, password=True),
        ),
        anchors=("bindpw", "rootpw", "authtok", "bind_pw", "BINDPW", "ROOTPW", "AUTHTOK", "BIND_PW"),
    ),
    # A PostgreSQL password file (.pgpass) line, hostname:port:database:username:password: the rest of the line.
    Rule(
        "pgpass_password",
        regex_rule(
            r"(?m)^[ \t]{0,8}+(?P<host>\*|[A-Za-z0-9][A-Za-z0-9.\-]{0,252}+):(?:[0-9]{1,5}|\*):[\w.\-*]{1,63}+:"
            r"(?P<login>[\w.\-*@]{1,63}+):(?P<s>[^\s:][^\r\n]{0,254}[^\s])[ \t]{0,8}+\r?$",
            check=lambda m, secret: (
                (m.group("host") == "*" or any(c.isalpha() or c == "." for c in m.group("host")))
                and prose_value(secret)
                and assignment_value_ok(secret, quoted=True, password=True)
            ),
        ),
        # The colons around the database name: a colon after a digit alone ("Document 5:", "12:30") is everywhere.
        anchors=(r":(?<=[0-9*]:)[\w.\-*]{1,63}+:",),
    ),
    # A .netrc / _netrc entry (curl, git, ftp): "machine HOST login USER password VALUE", on one line or several.
    Rule(
        "netrc_password",
        regex_rule(
            r"(?<![\w-])(?:machine[ \t]{1,8}+[^\s]{1,253}+|default)(?:\s{1,64}+(?:account|port)[ \t]{1,8}+[^\s]{1,256}+){0,2}?"
            r"\s{1,64}+login[ \t]{1,8}+(?P<login>[^\s]{1,256}+)(?:\s{1,64}+(?:account|port)[ \t]{1,8}+[^\s]{1,256}+){0,2}?"
            r"\s{1,64}+password[ \t]{1,8}+(?P<s>[^\s'\"`]{1,256}+)",
            check=_netrc_check,
        ),
        anchors=("machine", "default"),
    ),
    # Redis: redis.conf's requirepass/masterauth, the AUTH command, a client's auth("password").
    Rule(
        "redis_password",
        regex_rule(
            r"(?<![\w-])(?:requirepass|masterauth)[ \t]{1,8}+(?P<q>['\"]?)(?P<s>[^\s'\"#]{4,256}+)(?P=q)(?=[ \t]*+(?:\r?\n|\Z))",
            r"(?<![\w-])AUTH[ \t]{1,8}+(?!(?:PLAIN|LOGIN|CRAM|XOAUTH|DIGEST|EXTERNAL|GSSAPI|NTLM|OAUTH|ANONYMOUS)\b)"
            r"(?:[\w\-]{1,64}+[ \t]{1,8}+)?(?P<s_cmd>[^\s'\";]{6,256}+)",
            r"[.:]auth\([ \t]{0,4}+(?P<q2>['\"])(?P<s_call>[^'\"\s]{4,256}+)(?P=q2)[ \t]{0,4}+\)",
            check=lambda m, s: (
                s != "foobared"  # redis.conf's own commented example
                and (
                    prose_password_value(s)
                    if m.groupdict().get("s_cmd") is not None
                    else assignment_value_ok(s, quoted=True, password=True)
                )
            ),
        ),
        anchors=("requirepass", "masterauth", r"AUTH[ \t]", r"\((?<=[.:]auth\()"),
    ),
    # A token handed to a command-line tool: vercel --token, dotnet nuget push --api-key, gh --secret ...
    Rule(
        "cli_token",
        regex_rule(
            r"(?<![\w-])--(?:api-?key|apikey|token|auth-token|access-token|client-secret|secret-key|account-key|sas-token"
            r"|master-key|storage-key|app-key|admin-key|signing-key|webhook-secret|bot-token|access-key-secret)(?:[ \t]{1,4}+|=)"
            r"['\"]?(?P<s>[^\s'\"`$<{-][^\s'\"`$]{14,254}[^\s'\"`$,.;:)\]}])",
            # gh secret set NAME --body VALUE, wandb login VALUE, ngrok [config add-]authtoken VALUE
            r"(?<![\w-])gh[ \t]{1,4}+secret[ \t]{1,4}+set[ \t]{1,4}+[^\s|;&]{1,128}+(?:[ \t]{1,4}+-[^\s|;&]{1,64}+)*?"
            r"[ \t]{1,4}+(?:--body|-b)(?:[ \t]{1,4}+|=)['\"]?(?P<s_gh>[^\s'\"`$<{-][^\s'\"`$]{14,254}[^\s'\"`$,.;:)\]}])",
            r"(?<![\w-])(?:wandb[ \t]{1,4}+login(?:[ \t]{1,4}+--[a-z\-]{1,32}+)*+|ngrok[ \t]{1,4}+(?:config[ \t]{1,4}+add-)?authtoken)"
            r"[ \t]{1,4}+['\"]?(?P<s_cli>[^\s'\"`$<{-][^\s'\"`$]{14,254}[^\s'\"`$,.;:)\]}])",
            check=lambda _m, s: prose_key_value(s),
        ),
        anchors=(
            r"-(?<=--)(?:api-?key|apikey|token|auth-token|access-token|client-secret|secret-key|account-key|sas-token"
            r"|master-key|storage-key|app-key|admin-key|signing-key|webhook-secret|bot-token|access-key-secret)",
            "secret set",
            "wandb",
            "authtoken",
        ),
    ),
)
