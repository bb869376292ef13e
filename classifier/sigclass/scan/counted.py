"""Counted evidence: a pattern that names a family only after it was seen N times (`min_count`), and side hits (facts, markers, key=value)."""

from __future__ import annotations

from dataclasses import replace

from sigclass.records import MAX_LINES_KEPT
from sigclass.scan.blocks import Marker
from sigclass.scan.triggers import FAIL_VERBS, G_EXIT, G_KV, G_MARK, MARKER, MARKER_PRE, OK_VERBS, START_VERBS
from sigclass.scan.overtime import join_open, quiet_spell, register, touch
from sigclass.text.lines import fingerprint, Line, parse_time
from sigclass.text.workers import exits_in_line, number_id, ROOT_CAUSE_HEAD, TABLE_RANK, rank_of_row
from sigclass.vocab import MarkerKind, Method, SignatureMode


MAX_FACT_LINES = 20000  # unit-scope fact sightings kept per source, with their line (what a unit's own lines say)


class CountedEvidence:
    """Counted patterns, facts, shard markers, key=value fields and launchers' exit lines of one source (a part of
    `ScanState`)."""

    def _side_hits(self, ln: Line, lineno: int, pids: set[int]) -> None:
        for pid in pids:
            fp = self.sc.fact_pat.get(pid)
            if fp is None:
                continue
            if pid not in self.unit_fact_ids:
                self._fact_line(ln, pid)  # last value wins: read when the facts are asked for (scan.deferred)
                continue
            # a unit-scope fact: each sighting is kept with its line (what a unit's own lines say)
            m = self.sc.guard.search(fp, ln.content)
            value = fp.fact_value(m) if m is not None else None
            if value is not None:
                self.facts.setdefault(ln.worker or "", {})[fp.fact] = value
                if len(self.fact_lines) < MAX_FACT_LINES:
                    self.fact_lines.append((lineno, ln.worker or "", fp.fact, value))
        if G_MARK in pids:
            for rx in (MARKER, MARKER_PRE):
                # shard-first on the whole line (a log header may swallow a `[shard 3]` tag); verb-first on the body
                m = rx.search(ln.content if rx is MARKER else ln.body)
                verb = m["verb"].lower() if m else ""
                kind = (MarkerKind.START if verb in START_VERBS else MarkerKind.OK if verb in OK_VERBS
                        else MarkerKind.FAILED if verb in FAIL_VERBS else None)
                if kind:
                    self.markers.append(Marker(number_id(m["unit"]), kind, lineno, self._cur_time(), ln.worker, ln.stream,
                                               ln.body.strip()[:300]))
                    break
        if G_KV in pids:
            self._kv_fields(ln)
        if G_EXIT in pids:
            table = TABLE_RANK.match(ln.body)
            if table is not None:  # a launcher table's rank row, for the exit row below it
                self.table_rank = rank_of_row(table)
            elif ROOT_CAUSE_HEAD.match(ln.body):
                self.table_first = True
            else:
                exits = exits_in_line(ln.content, lineno, self.table_rank, self._cur_time())
                if self.table_first and exits:  # the row the table heads as its first observed failure
                    exits = [replace(e, first=True) for e in exits]
                    self.table_first = False
                if ln.stream is not None and ln.stream.kind == "host":  # a launcher on a pdsh host: that host's worker
                    exits = [replace(e, worker=ln.worker, last_started=False) for e in exits]
                self.exits.extend(exits)
        for pid in pids:
            need = self.sc.counted.get(pid)
            if need is not None:
                self._count(self.sc.any_family[pid], pid, need, ln, lineno)

    def _count(self, fam: str, pid: int, need: int, ln: Line, lineno: int) -> None:
        sig = self.sc.ledger[fam]
        learned_mode = self.sc.signatures == SignatureMode.LEARNED
        if learned_mode and (self.sc.learned is None or (fam, ln.worker) in self.declined):
            return
        family_wide = sig.min_count > 1  # all the family's patterns feed one counter
        pats = [p for p in sig.any if p.index in self.sc.counted] if family_wide else \
            [p for p in sig.any if p.index == pid]
        if not any(self.sc.guard.search(p, ln.content) for p in pats):
            return
        if any(self.sc.guard.search(p, ln.content) for p in sig.none):
            return
        key = (fam, ln.worker) if family_wide else (fam, ln.worker, pid)
        if (fam, ln.worker) in self.counters and key != (fam, ln.worker):
            key = (fam, ln.worker)  # the family already fired for this worker: later lines add to that finding
        done = self.counters.get(key)
        if done is not None and quiet_spell(self.counted_last.get(id(done)), self._cur_time()):
            # the same fault back after a quiet spell is a new finding: count it afresh
            self.counters = {k: v for k, v in self.counters.items() if v is not done}
            done = None
            key = (fam, ln.worker) if family_wide else (fam, ln.worker, pid)
        if done is not None:
            done.count += 1
            if len(done.lines) < MAX_LINES_KEPT:
                done.lines.append(lineno)
            done.end_line = lineno
            self.counted_last[id(done)] = self._cur_time()
            touch(self.family_open, done, self.counted_last[id(done)])
            return
        seen = self.counts.setdefault(key, [])
        seen.append((lineno, ln, self._cur_time()))
        if len(seen) < need:
            return
        first_line, _, first_time = seen[0]
        ev = [x.content for _, x, _ in seen[:3]]
        method, conf = Method.REGEX, 1.0
        if learned_mode:
            # in learned mode the counted lines are only evidence: the model says what they are, or nothing
            guess = self._ask_learned([x.body for _, x, _ in seen], ln.worker)
            if guess is None or guess[0] not in self.sc.ledger:
                self.declined.add((fam, ln.worker))
                del self.counts[key]
                return
            sig, method, conf = self.sc.ledger[guess[0]], Method.LEARNED, guess[1]
        joined = join_open(self.family_open, sig.id, ln.worker, [a for a, _, _ in seen], self._cur_time())
        if joined is not None:  # another rule of the family already has this fault open: one finding
            self.counters[key] = joined
            self.counters.setdefault((fam, ln.worker), joined)
            self.counted_last[id(joined)] = self._cur_time()
            del self.counts[key]
            return
        f = self._make(sig, ev, conf, method, first_line, lineno, first_time, ln.worker, ln.stream, None,
                       [x.content for _, x, _ in seen], [x.content for _, x, _ in seen[:1]])
        f.count = len(seen)
        f.lines = [a for a, _, _ in seen]
        n = self.episodes[(fam, ln.worker)] = self.episodes.get((fam, ln.worker), 0) + 1
        if n > 1:
            f.fingerprint = fingerprint([f.fingerprint, f"episode {n}"])
        self.counted_last[id(f)] = self._cur_time()
        register(self.family_open, f, self.counted_last[id(f)])
        first = seen[0][1]
        f.timed = bool(first.time_override) or parse_time(first.content, self.year) is not None
        self.counters[key] = f
        self.counters.setdefault((fam, ln.worker), f)
        del self.counts[key]
        self._emit(f)
