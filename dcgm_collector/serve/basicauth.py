"""Basic auth for ``--web-config-file``: credential parsing, bcrypt checks, verdict caches, failed-check limits.

:class:`~dcgm_collector.serve.webconfig.WebConfig` answers each request's
Authorization header with the pieces here:

* Every check costs the same bcrypt work, whoever the user: that of the
  highest cost among the configured users (capped at DUMMY_HASH_MAX_COST).
  An unknown user is checked against a dummy hash at that cost; a user whose
  hash has a lower cost c is checked, then padded with dummy checks at costs
  c, c+1, ... up to the highest (2^c + 2^c + ... + 2^(C-1) = 2^C rounds), so
  neither the answer time nor success or failure tells which users exist.
  (exporter-toolkit checks unknown users against one cost-10 hash, which
  leaves users of other costs tellable apart.)
* Verdicts are cached for AUTH_CACHE_S (bcrypt at cost 10 takes ~80 ms: a
  scrape every few seconds should not pay that), keyed by a keyed hash of the
  credentials, never the password itself.  Good and bad verdicts are cached
  apart, so a flood of wrong passwords cannot push a scraper's good one out.
* At most BCRYPT_WORKERS checks run at once and BCRYPT_QUEUE more may wait;
  beyond that a request that needs a check gets a quick 503 (with
  Retry-After) instead of queueing without limit.  Cached verdicts never wait.
* Each client address may fail FAILED_AUTH_BURST uncached checks at once,
  then one more per FAILED_AUTH_INTERVAL_S; beyond that it gets 429 with
  Retry-After, without a bcrypt check.  A check that succeeds costs no
  allowance.  A scraper whose good verdict is cached is never limited; one
  that must be checked anew from an address that is guessing passwords
  waits for its allowance like the guesser.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import bcrypt

from dcgm_collector.serve.server import Unavailable

AUTH_CACHE_S = 60.0
AUTH_CACHE_ENTRIES = 100
# bcrypt checks run at once (each takes a core) and checks that may wait for one
BCRYPT_WORKERS = 2
BCRYPT_QUEUE = 8
# failed checks a client address may make at once, then one per interval
FAILED_AUTH_BURST = 20
FAILED_AUTH_INTERVAL_S = 1.0
FAILED_AUTH_ADDRESSES = 4096   # addresses remembered; the least recent is forgotten first
# making the dummy hash costs as much as one check; past this a start-up would take minutes
DUMMY_HASH_MAX_COST = 16


@dataclass
class AuthCache:
    """Recent bcrypt verdicts, keyed by an HMAC of the credentials under a per-process key."""

    ttl_s: float = AUTH_CACHE_S
    size: int = AUTH_CACHE_ENTRIES
    clock: Callable[[], float] = time.monotonic
    _key: bytes = field(default_factory=lambda: secrets.token_bytes(32))
    _entries: OrderedDict = field(default_factory=OrderedDict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def digest(self, user: bytes, hashed: bytes, password: bytes) -> bytes:
        message = b"\0".join((user, hashed, password))
        return hmac.new(self._key, message, hashlib.sha256).digest()

    def get(self, digest: bytes) -> bool | None:
        with self._lock:
            found = self._entries.get(digest)
            if found is None:
                return None
            verdict, expires = found
            if self.clock() >= expires:
                del self._entries[digest]
                return None
            self._entries.move_to_end(digest)
            return verdict

    def put(self, digest: bytes, verdict: bool) -> None:
        with self._lock:
            self._entries[digest] = (verdict, self.clock() + self.ttl_s)
            self._entries.move_to_end(digest)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)


class FailureAllowance:
    """Per client address, a token bucket of failed credential checks; a bounded table of addresses."""

    def __init__(self, burst: int = FAILED_AUTH_BURST, interval_s: float = FAILED_AUTH_INTERVAL_S,
                 addresses: int = FAILED_AUTH_ADDRESSES, clock: Callable[[], float] = time.monotonic) -> None:
        self.burst = burst
        self.interval_s = interval_s
        self.addresses = addresses
        self._clock = clock
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()   # address -> (tokens, at)
        self._lock = threading.Lock()

    def take(self, address: str) -> bool:
        """Take one attempt's token (before the check, so concurrent guesses cannot overdraw); False if none."""
        with self._lock:
            now = self._clock()
            tokens, at = self._buckets.get(address, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - at) / self.interval_s)
            allowed = tokens >= 1.0
            self._buckets[address] = (tokens - 1.0 if allowed else tokens, now)
            self._buckets.move_to_end(address)
            while len(self._buckets) > self.addresses:
                self._buckets.popitem(last=False)
            return allowed

    def give_back(self, address: str) -> None:
        """The check succeeded: it costs no allowance."""
        with self._lock:
            found = self._buckets.get(address)
            if found is not None:
                self._buckets[address] = (min(float(self.burst), found[0] + 1.0), found[1])

    def retry_after_s(self) -> int:
        return max(1, round(self.interval_s))


class BcryptSlots:
    """At most ``workers`` checks at once and ``queue`` waiting; Unavailable beyond, at once."""

    def __init__(self, workers: int = BCRYPT_WORKERS, queue: int = BCRYPT_QUEUE) -> None:
        self._running = threading.Semaphore(workers)
        self._admitted = 0
        self._limit = workers + queue
        self._lock = threading.Lock()

    def run(self, check: Callable[[], bool]) -> bool:
        with self._lock:
            if self._admitted >= self._limit:
                raise Unavailable("503 Service Unavailable: too many credential checks at once, retry shortly")
            self._admitted += 1
        try:
            with self._running:
                return check()
        finally:
            with self._lock:
                self._admitted -= 1


def basic_credentials(header: str | None) -> tuple[bytes, bytes] | None:
    if not header:
        return None
    scheme, _, encoded = header.strip().partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(encoded.strip(), validate=True)
    except (binascii.Error, ValueError):
        return None
    user, sep, password = decoded.partition(b":")
    if not sep:
        return None
    return user, password


def is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def check_password(password: bytes, hashed: bytes) -> bool:
    try:
        return bcrypt.checkpw(password, hashed)
    except ValueError:   # bcrypt >= 5 refuses passwords over 72 bytes: not a match
        return False


def hash_cost(hashed: bytes) -> int:
    return int(hashed[4:6])   # hashes are $2?$NN$...


def check_cost(users: Mapping[str, bytes]) -> int:
    """The bcrypt cost every check is brought up to: the highest users' cost, within reason."""
    if not users:
        return 0
    return min(max(hash_cost(h) for h in users.values()), DUMMY_HASH_MAX_COST)


def dummy_hashes(users: Mapping[str, bytes], check_cost: int) -> dict[int, bytes]:
    """Hashes of a random password at every cost from the lowest users' cost to ``check_cost``.

    The one at ``check_cost`` stands in for unknown users; the lower ones pad the
    checks of users with cheaper hashes.  Making them costs about two checks.
    """
    if not users:
        return {}
    lowest = min(min(hash_cost(h) for h in users.values()), check_cost)
    secret = secrets.token_bytes(16)
    return {cost: bcrypt.hashpw(secret, bcrypt.gensalt(cost)) for cost in range(lowest, check_cost + 1)}
