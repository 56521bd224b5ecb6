"""test_ssl's `https://google.com/generate_204` answered on this machine (scripts/conformance --local-https-for-ssl-test).

cibuildwheel's test_ssl builds a project whose setup.py opens that URL twice: with the
default context (the certificate verified against the default CA store) and with
`ssl.SSLContext(ssl.PROTOCOL_TLSv1_2)`. On a machine with no DNS and no route out it cannot
connect, whatever the build environment does. This stands in for the internet, and for
nothing else of the test:

- a throwaway CA, made by the openssl CLI for this run only, signs a certificate for
  google.com; its key lives in the cache beside the journal and is removed afterwards;
- a real HTTPS server on 127.0.0.1:443 (a thread of the pytest process, so it cannot
  outlive it) answers `GET /generate_204` with 204 No Content, as google's does;
- `google.com` resolves to 127.0.0.1 through one line appended to /etc/hosts (glibc reads
  it first, nsswitch `hosts: files dns`), so the build's Python connects by name;
- the CA is trusted the way a user's trust store would be for the build: SSL_CERT_FILE in
  the environment the test hands to the build tool (OpenSSL's default verify paths read it).

/etc/hosts is given back byte for byte: its original bytes are written to a journal file
before the line is added, and `restore_hosts` writes them back (in a `finally`, and again
from scripts/conformance after pytest exits, and before a run starts, for a run that was
killed). The file is rewritten in place, never replaced, so its inode, mode and any bind
mount stay as they were.
"""

import http.server
import shutil
import signal
import ssl
import subprocess
import sys
import threading
from contextlib import contextmanager
from pathlib import Path

HOST = "google.com"
ADDRESS = ("127.0.0.1", 443)
HOSTS = Path("/etc/hosts")
# The comment names the entry's owner for anyone who reads /etc/hosts while it is there.
HOSTS_LINE = f"{ADDRESS[0]} {HOST}  # crosswheel scripts/conformance test_ssl, removed when it ends\n"
JOURNAL = "hosts.orig"
SCRATCH = "certificates"


class LocalHttpsError(Exception):
    pass


def _openssl(*args, cwd):
    result = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True)
    if result.returncode != 0:
        raise LocalHttpsError(f"openssl {args[0]} failed: {result.stderr.strip()}")


def make_certificates(directory):
    """(CA certificate, server certificate, server key) in directory, made with the openssl CLI.

    The extensions are the ones Python's VERIFY_X509_STRICT (default from 3.13) asks for, so
    the chain verifies whichever CPython the build uses."""
    directory = Path(directory)
    (directory / "server.ext").write_text(
        f"subjectAltName = DNS:{HOST}\n"
        "basicConstraints = critical, CA:FALSE\n"
        "keyUsage = critical, digitalSignature, keyEncipherment\n"
        "extendedKeyUsage = serverAuth\n"
        "subjectKeyIdentifier = hash\n"
        "authorityKeyIdentifier = keyid, issuer\n"
    )
    _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
             "-subj", "/CN=crosswheel conformance throwaway CA",
             "-addext", "basicConstraints = critical, CA:TRUE",
             "-addext", "keyUsage = critical, keyCertSign, cRLSign",
             "-addext", "subjectKeyIdentifier = hash", cwd=directory)
    _openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-keyout", "server.key", "-out", "server.csr", "-subj", f"/CN={HOST}", cwd=directory)
    _openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
             "-out", "server.pem", "-days", "2", "-extfile", "server.ext", cwd=directory)
    return directory / "ca.pem", directory / "server.pem", directory / "server.key"


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.server.requests.append(self.path)
        self.send_response(204 if self.path == "/generate_204" else 404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format, *args):
        # One line per request on stderr: pytest keeps it with the test's output.
        print(f"local https: {self.address_string()} {format % args}", file=sys.stderr)


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, context):
        self.requests = []
        self.handshake_errors = []
        self.context = context
        super().__init__(ADDRESS, _Handler)

    def get_request(self):
        # The TLS handshake happens here, at accept. One a client fails (it rejects the
        # certificate) is recorded for the report: that, not a refused connection, is what a
        # build that does not trust the CA looks like. socketserver then serves on.
        sock, address = self.socket.accept()
        try:
            return self.context.wrap_socket(sock, server_side=True), address
        except (ssl.SSLError, OSError) as err:
            self.handshake_errors.append(str(err))
            sock.close()
            raise


@contextmanager
def serve(certificate, key):
    """The HTTPS server on 127.0.0.1:443 while the block runs; yields it (its `requests`)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certificate, key)
    try:
        server = _Server(context)
    except OSError as err:
        raise LocalHttpsError(f"cannot listen on {ADDRESS[0]}:{ADDRESS[1]}: {err}") from err
    thread = threading.Thread(target=server.serve_forever, name="local-https", daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _write_in_place(path, data):
    with open(path, "r+b") as file:
        file.write(data)
        file.truncate()


def _added(original):
    """The bytes appended to original: the line, after a newline if the file lacked its last."""
    separator = b"" if not original or original.endswith(b"\n") else b"\n"
    return separator + HOSTS_LINE.encode()


def restore_hosts(journal_dir):
    """Gives /etc/hosts back its bytes from the journal, if a run left one; True if it did.

    Only the appended line is taken out when the file changed otherwise since (someone
    else's edit is kept); then it is no longer byte for byte, and this says so."""
    journal = Path(journal_dir) / JOURNAL
    if not journal.exists():
        return False
    original = journal.read_bytes()
    current = HOSTS.read_bytes()
    line = HOSTS_LINE.encode()
    if current == original + _added(original):
        _write_in_place(HOSTS, original)
    elif line in current:
        _write_in_place(HOSTS, current.replace(line, b"", 1))
        print(f"conformance: {HOSTS} changed during the run; removed only its {HOST} line", file=sys.stderr)
    journal.unlink()
    return True


def clean_up(journal_dir):
    """What a killed run left: /etc/hosts given back (True if it was), the CA's key removed."""
    shutil.rmtree(Path(journal_dir) / SCRATCH, ignore_errors=True)
    return restore_hosts(journal_dir)


def _names_host(text):
    for line in text.splitlines():
        fields = line.split("#", 1)[0].split()
        if HOST in fields[1:]:
            return line
    return None


@contextmanager
def hosts_entry(journal_dir):
    """google.com resolves to 127.0.0.1 while the block runs."""
    restore_hosts(journal_dir)
    original = HOSTS.read_bytes()
    existing = _names_host(original.decode(errors="replace"))
    if existing:
        # glibc takes the first matching line, so ours would not be the one read.
        raise LocalHttpsError(f"{HOSTS} already names {HOST} ({existing.strip()!r}); not changing it")
    journal = Path(journal_dir) / JOURNAL
    journal.parent.mkdir(parents=True, exist_ok=True)
    # The journal is written before the file is touched: whatever ends this process
    # afterwards, a later restore_hosts finds the bytes to give back.
    journal.write_bytes(original)
    try:
        _write_in_place(HOSTS, original + _added(original))
        yield
    finally:
        restore_hosts(journal_dir)


@contextmanager
def _sigterm_unwinds():
    # A SIGTERM would end the process without running `finally`; raising instead lets the
    # server stop and /etc/hosts be restored on the way out.
    def handler(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def google_com_on_this_machine(journal_dir):
    """Everything above while the block runs; yields (CA certificate path, server)."""
    # Beside the journal rather than in /tmp: a killed run's CA key is removed by the next.
    scratch = Path(journal_dir) / SCRATCH
    with _sigterm_unwinds():
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir(parents=True)
        try:
            ca, certificate, key = make_certificates(scratch)
            with serve(certificate, key) as server, hosts_entry(journal_dir):
                yield ca, server
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

