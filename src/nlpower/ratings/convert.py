"""Parameters from a fitted pilot: :func:`nlpower.convert.as_params` (it lives below the
ratings and power layers; this name is kept for the CLI and the reference docs)."""

from ..convert import FittedPilot, PilotLike, as_params, is_pilot_fit

__all__ = ["FittedPilot", "PilotLike", "as_params", "is_pilot_fit"]
