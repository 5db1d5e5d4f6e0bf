"""The face box of eye centres, shared by :func:`portcv.data.face_box` and the MCT detector's
training crops (``portcv.detect``)."""

from __future__ import annotations

#: Face box geometry of cv2's Haar default cascade measured on CSU ScrapShots (width 2.54 x the
#: eye distance, eye midpoint at (0.49 w, 0.38 w)): MCT boxes and cv2 boxes mean the same thing.
BOX_PER_EYE_DISTANCE = 2.54
EYE_MID = (0.49, 0.38)
