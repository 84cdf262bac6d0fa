"""An export's report as text (``--json`` prints :meth:`ExportResult.as_dict` instead)."""

from __future__ import annotations


def _g(x: float) -> str:
    return f"{x:.3g}"


def check_lines(check) -> list[str]:
    """The ``--check`` part of the report."""
    named = f"; {check.synthetic_at_named_splits} more at the splits named above" \
        if check.synthetic_at_named_splits else ""
    lines = [f"check on {check.data} ({check.rows:,} rows, {check.queries:,} queries) with {check.evaluator}:",
             f"  rows of the data on another branch       {check.rows_other_branch:,}",
             f"  synthetic rows on another branch         {check.synthetic_other_branch:,} of "
             f"{check.synthetic_rows:,} (on, just below and just above every threshold, NaN, 0, +-inf){named}",
             f"  max |score - rankcli's score|            {_g(check.max_abs_diff)} (rounding bound of the engine's "
             f"summation: {_g(check.max_bound)})",
             f"  rows beyond that bound                   {check.rows_beyond_bound:,}",
             f"  queries whose ranking changes            {check.queries_changed:,} "
             f"({check.queries_changed_beyond_bound:,} with a score beyond the bound)"]
    if check.splits_other_branch:
        lines.append("  splits deciding otherwise: " + ", ".join(check.splits_other_branch[:8])
                     + (", ..." if len(check.splits_other_branch) > 8 else ""))
    lines.append(f"  {'PASSED' if check.passed else 'FAILED'}: "
                 + ("every row takes LightGBM's branch" if check.passed else "the engine decides otherwise than "
                    "LightGBM (exit 5)"))
    return lines


def report(result) -> str:
    """The text report of an :class:`~rankcli.export_model.ExportResult`."""
    kind = f", model/{result.model_type}" if result.model_type else ""
    fill = sum(1 for f in result.features if not f["defined"])
    lines = [f"{result.model} -> {result.output} ({result.target}{kind}): {result.trees} trees, {result.splits:,} "
             f"splits, {len(result.features)} features used"
             + (f" ({fill} without a definition: fill them in, see README.md)" if fill else ""),
             "files: " + ", ".join(result.files)]
    if result.normalization:
        lines.append(f"normalisation: {result.normalization}")
    if result.inexact:
        lines.append(f"splits that cannot be written exactly: {len(result.inexact)}")
        for item in result.inexact[:10]:
            lines.append(f"  {item['split']}: LightGBM sends values up to {item['lightgbm_cut']!r} left, the engine "
                         f"up to {item['engine_cut']!r}")
        if len(result.inexact) > 10:
            lines.append(f"  ... ({len(result.inexact) - 10} more; --json lists them all)")
    if result.check is not None:
        lines += check_lines(result.check)
    return "\n".join(lines)
