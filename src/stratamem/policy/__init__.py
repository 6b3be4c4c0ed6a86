"""The policy layer: what a tool call, a prompt and an output may do.

Hook points (``HookPoint``): PRE_TOOL_CALL, POST_TOOL_RESPONSE,
PRE_CONTEXT_INJECTION, PRE_OUTPUT. At each, built-in guards run first
(read-only, the memory-poisoning scanner, no write down), then operator hooks
and rules; the first non-ALLOW answer wins, errors and timeouts BLOCK, and
every decision is audited as ``policy.decision``.

Modules: ``model`` (vocabulary), ``conditions``/``rules`` (pure evaluation),
``loader`` (YAML/JSON rule files), ``facts`` (what rules can see),
``guards`` and ``scanner`` (built-in checks; ``normalize`` gives the scanner
its folded, repaired and decoded views), ``gate`` (the one check every
memory write passes, on every path), ``redact`` and ``credentials`` (rule
redaction, and the one credential scrubber for events and errors),
``timeout``, ``engine`` (the ``Policy`` object), ``lineage`` (who read a
memory).
"""

from .engine import DEFAULT_POLICY, ApprovalRequest, OutputCheck, Policy, deny_all
from .gate import MemoryWrite, gated_save, gated_save_many
from .lineage import Access, history, readers, writers
from .loader import load_rules, rules_from_data, rules_from_yaml
from .model import Action, Condition, Decision, HookPoint, Operator, Rule
from .redact import redact_secrets
from .rules import first_match
from .scanner import QUARANTINE_TAG, ScanMode, scan

__all__ = [
    "DEFAULT_POLICY",
    "QUARANTINE_TAG",
    "Access",
    "Action",
    "ApprovalRequest",
    "Condition",
    "Decision",
    "HookPoint",
    "MemoryWrite",
    "Operator",
    "OutputCheck",
    "Policy",
    "Rule",
    "ScanMode",
    "deny_all",
    "first_match",
    "gated_save",
    "gated_save_many",
    "history",
    "load_rules",
    "readers",
    "redact_secrets",
    "rules_from_data",
    "rules_from_yaml",
    "scan",
    "writers",
]
