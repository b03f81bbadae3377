"""Input checks shared by the helpers: every message names the argument and the shapes."""

import numpy as np


def as_float_array(x, name, min_ndim=1):
    """Return `x` as a floating ndarray (float32 stays float32), or raise naming `name`."""
    if isinstance(x, (str, bytes)) or x is None:
        raise TypeError(f"{name} must be an array of numbers, got {type(x).__name__}")
    try:
        arr = np.asarray(x)
    except ValueError:  # e.g. a ragged list of lists: numpy's own message names no argument
        raise ValueError(f"{name} must be a rectangular array of numbers, got a ragged {type(x).__name__}") from None
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise TypeError(f"{name} must be an array of numbers, got dtype {arr.dtype}")
    if np.iscomplexobj(arr):
        raise TypeError(f"{name} must be real, got dtype {arr.dtype}")
    if not np.issubdtype(arr.dtype, np.floating):
        arr = arr.astype(np.float64)
    if arr.ndim < min_ndim:
        raise ValueError(f"{name} must have at least {min_ndim} dimension(s), got shape {arr.shape}")
    return arr


def bool_array(mask, name):
    """Return `mask` as a boolean ndarray (True = may attend), or raise naming `name`."""
    try:
        arr = np.asarray(mask)
    except ValueError:  # a ragged list of lists
        raise ValueError(f"{name} must be a rectangular boolean array, got a ragged {type(mask).__name__}") from None
    if arr.dtype != bool:
        raise TypeError(
            f"{name} must be a boolean array (True = may attend), got dtype {arr.dtype} with shape {arr.shape}"
        )
    return arr


def as_bool_mask(mask, name, target_shape):
    """Return `mask` as a boolean array that broadcasts to `target_shape`, or raise."""
    if mask is None:
        return None
    arr = bool_array(mask, name)
    target_shape = tuple(target_shape)
    if arr.ndim > len(target_shape):
        raise ValueError(
            f"{name} with shape {arr.shape} has more dimensions than the scores' shape {target_shape} (..., T_q, T_k)"
        )
    try:
        joint = np.broadcast_shapes(arr.shape, target_shape)
    except ValueError:
        joint = None
    # the mask must fit the scores as they are: it may not add batch items they do not have
    if joint != target_shape:
        raise ValueError(
            f"{name} with shape {arr.shape} does not broadcast to the scores' shape {target_shape} (..., T_q, T_k)"
        )
    return arr


def int_at_least(value, name, minimum):
    """Return `value` as an int if it is an integer >= `minimum`, else raise naming `name`.

    A bool or a float is a TypeError (3.0 is not a count); a smaller integer is a ValueError.
    """
    wanted = "a positive int" if minimum == 1 else f"an int >= {minimum}"
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be {wanted}, got {type(value).__name__} {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be {wanted}, got {value}")
    return int(value)


def positive_int(value, name):
    """Return `value` as an int if it is a positive integer, else raise naming `name`."""
    return int_at_least(value, name, 1)


def check_axis(axis, arr, name):
    """Return `axis` if it is a valid axis of `arr`, else raise naming `name` and its shape."""
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"axis must be an int, got {type(axis).__name__} {axis!r}")
    if not -arr.ndim <= axis < arr.ndim:
        raise ValueError(f"axis={axis} is out of range for {name} with shape {arr.shape}")
    return int(axis)


def as_rng(rng):
    """A numpy Generator from `rng`: None -> the fixed default seed 0, an int -> that seed, a Generator -> itself.

    One rule for every helper that draws random numbers: without an rng, the result is the
    same on every run (a notebook's outputs must not change); pass a seed or a Generator for others.
    """
    if rng is None:
        return np.random.default_rng(0)
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        return np.random.default_rng(int(rng))
    raise TypeError(f"rng must be None, an int seed or a numpy Generator, got {type(rng).__name__} {rng!r}")
