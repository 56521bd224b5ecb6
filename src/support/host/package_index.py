"""Reads the package index pip is configured for, without building anything.

    python3 package_index.py files PROJECT [INDEX]
        One project's files as PEP 691 JSON on stdout: {"files": [{"filename", "url",
        "hashes", "requires-python", "yanked"}, ...]}, urls absolute. Read from the JSON
        simple API, or from the HTML one (PEP 503) where the index serves only that.
    python3 package_index.py fetch PROJECT FILE DEST [INDEX]
        Downloads the file named FILE of PROJECT to DEST; prints its index sha256 (or an
        empty line when the index gives none). The caller verifies the bytes.
    python3 package_index.py download URL DEST
        Downloads URL (a file's url from `files`) to DEST; the caller verifies the bytes.

INDEX (a simple-API URL) replaces pip's own. Without it the index is pip's: `--index-url`
and `--extra-index-url` as `pip download` reads them (PIP_INDEX_URL, pip.conf), fetched
with pip's session (its proxy, certificates, retries and credentials), and pip's
`--find-links` too (a local folder's files with their sha256 computed here, or a page's
links), before the indexes, as `pip download` would find them. Errors: one line on
stderr, status 1.
"""

import html.parser
import json
import sys
import urllib.parse
import urllib.request

ACCEPT = "application/vnd.pypi.simple.v1+json, text/html;q=0.1"


class Index:
    """The index URLs and an HTTP getter: pip's when pip can say, else urllib's."""

    def __init__(self, index, need_urls=True):
        self.session = None
        self.timeout = 120
        self.find_links = []
        urls = [index] if index else None
        try:
            from pip._internal.commands import create_command

            command = create_command("download")
            options, _ = command.parse_args([])
            if urls is None and need_urls:
                urls = [options.index_url] + list(options.extra_index_urls or [])
                self.find_links = list(options.find_links or [])
                if options.no_index:
                    fail("pip is configured with --no-index: no index to read")
            self.timeout = options.timeout or self.timeout
            self.session = command._build_session(options)
        except Exception:  # an older or newer pip: its defaults, through urllib
            self.session = None
        if urls is None and need_urls:
            import os

            urls = [os.environ.get("PIP_INDEX_URL") or default_index()]
        self.urls = urls

    def get(self, url, headers=None):
        """(final url, content type, body bytes) of `url`."""
        if self.session is not None:
            answer = self.session.get(url, headers=headers or {}, timeout=self.timeout)
            answer.raise_for_status()
            return answer.url, answer.headers.get("Content-Type", ""), answer.content
        request = urllib.request.Request(url, headers=headers or {})
        with urllib.request.urlopen(request, timeout=self.timeout) as answer:
            return answer.geturl(), answer.headers.get("Content-Type", ""), answer.read()

    def save(self, url, destination):
        if self.session is not None:
            with self.session.get(url, stream=True, timeout=self.timeout) as answer:
                answer.raise_for_status()
                with open(destination, "wb") as out:
                    for chunk in answer.iter_content(1 << 20):
                        out.write(chunk)
            return
        with urllib.request.urlopen(url, timeout=self.timeout) as answer:
            with open(destination, "wb") as out:
                while chunk := answer.read(1 << 20):
                    out.write(chunk)


def default_index():
    try:
        from pip._internal.models.index import PyPI

        return PyPI.simple_url
    except Exception:
        fail("this pip does not say its default index: set PIP_INDEX_URL")


class Links(html.parser.HTMLParser):
    """The anchors of a PEP 503 project page, in PEP 691's shape."""

    def __init__(self, page):
        super().__init__()
        self.page = page
        self.files = []
        self.current = None

    def handle_starttag(self, tag, attrs):
        if tag != "a":
            return
        attrs = dict(attrs)
        href = attrs.get("href")
        if not href:
            return
        url, _, fragment = urllib.parse.urljoin(self.page, href).partition("#")
        hashes = {}
        if "=" in fragment:
            algorithm, _, digest = fragment.partition("=")
            hashes[algorithm] = digest
        yanked = attrs.get("data-yanked")
        self.current = {
            "filename": urllib.parse.unquote(url.rsplit("/", 1)[-1]),
            "url": url,
            "hashes": hashes,
            "requires-python": attrs.get("data-requires-python"),
            "yanked": (yanked or True) if "data-yanked" in attrs else False,
        }
        self.files.append(self.current)

    def handle_data(self, data):
        # The anchor's text is the file name; the URL's last part may not be.
        if self.current is not None and data.strip():
            self.current["filename"] = data.strip()

    def handle_endtag(self, tag):
        if tag == "a":
            self.current = None


def normalize(project):
    import re

    return re.sub(r"[-_.]+", "-", project).lower()


def belongs(file_name, project):
    """Whether `file_name` (an sdist or a wheel) is one of `project`'s files."""
    parts = file_name.split("-")
    return any(normalize("-".join(parts[:i])) == project for i in range(1, len(parts)))


def linked_files(index, location, project):
    """`project`'s files in one find-links location: a local folder or a page of links."""
    import hashlib
    import os
    import pathlib

    folder = location[len("file://") :] if location.startswith("file://") else location
    if os.path.isdir(folder):
        files = []
        for path in sorted(pathlib.Path(folder).iterdir()):
            if path.is_file() and belongs(path.name, project):
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
                files.append(
                    {
                        "filename": path.name,
                        "url": path.resolve().as_uri(),
                        "hashes": {"sha256": digest},
                        "requires-python": None,
                        "yanked": False,
                    }
                )
        return files
    if "://" not in location:
        return []
    try:
        final, _, body = index.get(location)
    except Exception as error:
        fail(f"cannot read the find-links page {location}: {error}")
    links = Links(final)
    links.feed(body.decode("utf-8", "replace"))
    return [entry for entry in links.files if belongs(entry["filename"], project)]


def project_files(index, project):
    """The files of `project` in pip's find-links and on every index, the first place's
    first for one file name."""
    project = normalize(project)
    seen = {}
    for location in index.find_links:
        for entry in linked_files(index, location, project):
            seen.setdefault(entry["filename"], entry)
    for base in index.urls:
        page = base.rstrip("/") + "/" + project + "/"
        try:
            final, content_type, body = index.get(page, {"Accept": ACCEPT})
        except Exception as error:
            status = getattr(getattr(error, "response", None), "status_code", None)
            status = status or getattr(error, "code", None)
            if status == 404:
                continue
            fail(f"cannot read {page}: {error}")
        if "json" in content_type:
            files = json.loads(body)["files"]
            for entry in files:
                entry["url"] = urllib.parse.urljoin(final, entry["url"])
        else:
            links = Links(final)
            links.feed(body.decode("utf-8", "replace"))
            files = links.files
        for entry in files:
            seen.setdefault(entry["filename"], entry)
    if not seen:
        places = index.find_links + index.urls
        fail(f"nothing lists {project} ({', '.join(places)})")
    return list(seen.values())


def fail(message):
    print(message, file=sys.stderr)
    sys.exit(1)


def main(argv):
    if len(argv) in (2, 3) and argv[0] == "files":
        index = Index(argv[2] if len(argv) == 3 else None)
        json.dump({"files": project_files(index, argv[1])}, sys.stdout)
        print()
    elif len(argv) in (4, 5) and argv[0] == "fetch":
        project, file_name, destination = argv[1:4]
        index = Index(argv[4] if len(argv) == 5 else None)
        match = [f for f in project_files(index, project) if f["filename"] == file_name]
        if not match:
            fail(f"the index lists no {file_name} for {project}")
        try:
            index.save(match[0]["url"], destination)
        except Exception as error:
            fail(f"cannot download {match[0]['url']}: {error}")
        print(match[0].get("hashes", {}).get("sha256", ""))
    elif len(argv) == 3 and argv[0] == "download":
        try:
            Index(None, need_urls=False).save(argv[1], argv[2])
        except Exception as error:
            fail(f"cannot download {argv[1]}: {error}")
    else:
        fail(
            "usage: package_index.py files PROJECT [INDEX]"
            " | fetch PROJECT FILE DEST [INDEX] | download URL DEST"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
