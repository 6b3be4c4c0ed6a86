"""The policy layer: what a tool call, a prompt and an output may do.

Hook points (``HookPoint``): PRE_TOOL_CALL, POST_TOOL_RESPONSE,
PRE_CONTEXT_INJECTION, PRE_OUTPUT. At each, built-in guards run first
(read-only, the memory-poisoning scanner, no write down), then operator hooks
and rules; the first non-ALLOW answer wins, errors and timeouts BLOCK, and
every decision is audited as ``policy.decision``.

Modules: ``model`` (vocabulary), ``conditions``/``rules`` (pure evaluation),
``loader`` (YAML/JSON rule files), ``facts`` (what rules can see),
``guards`` and ``scanner`` (built-in checks), ``redact``, ``timeout``,
``engine`` (the ``Policy`` object), ``lineage`` (who read a memory).
"""

from .engine import DEFAULT_POLICY, ApprovalRequest, OutputCheck, Policy, deny_all
from .lineage import Access, history, readers, writers
from .loader import load_rules, rules_from_data, rules_from_yaml
from .model import Action, Condition, Decision, HookPoint, Operator, Rule
from .rules import first_match
from .scanner import QUARANTINE_TAG, ScanMode, scan

__all__ = [
    "DEFAULT_POLICY",
    "Access",
    "Action",
    "ApprovalRequest",
    "Condition",
    "Decision",
    "HookPoint",
    "Operator",
    "OutputCheck",
    "Policy",
    "QUARANTINE_TAG",
    "Rule",
    "ScanMode",
    "deny_all",
    "first_match",
    "history",
    "load_rules",
    "readers",
    "rules_from_data",
    "rules_from_yaml",
    "scan",
    "writers",
]
