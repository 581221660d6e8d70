"""Calibration against measured data: fitted efficiency factors, cross-validation, error bands."""
from ..deploy.calibration import Calibration, load_file, packaged, resolve

__all__ = ["Calibration", "load_file", "packaged", "resolve"]
