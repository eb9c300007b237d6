"""Which observation spaces hold images: what the env family presets and the CNN encoder agree on.

It lives with the envs (not the encoders) so that choosing a preset from an env's spaces needs
no torch and no import of the algorithm.
"""

from __future__ import annotations

from gymnasium import spaces

MIN_IMAGE_SIDE = 16  # smaller 2-D/3-D Boxes are grids for the MLP, not images


def image_layout(shape) -> str | None:
    """"hwc", "chw" or "hw" when a Box of this shape is an image (H, W >= 16), else None.

    For 3-D shapes the channel axis is the smaller of the first and last (a frame stack
    (4, 84, 84) is CHW, an RGB frame (210, 160, 3) HWC); a tie reads as HWC, Gymnasium's habit."""
    shape = tuple(int(d) for d in shape)
    if len(shape) == 2:
        return "hw" if min(shape) >= MIN_IMAGE_SIDE else None
    if len(shape) != 3:
        return None
    layout, (h, w) = ("chw", shape[1:]) if shape[0] < shape[2] else ("hwc", shape[:2])
    return layout if min(h, w) >= MIN_IMAGE_SIDE else None


def has_image(space) -> bool:
    """Whether `space` (a Box or a StructuredBox) holds an image an ImageEncoder can take."""
    leaves = getattr(space, "leaves", None)
    if leaves is not None:
        return any(isinstance(leaf.space, spaces.Box) and image_layout(leaf.space.shape)
                   for leaf in leaves)
    return image_layout(space.shape) is not None
