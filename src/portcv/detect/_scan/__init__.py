"""What both detectors share: the checked scan parameters and the gray frame (``_parameters.py``),
the packed pyramid's maps and the window -> image mapping (``_pyramid.py``), the device kernels of
the pyramid, the compaction and the grouping (``_kernels.py``; their CuPy overrides are in
``_cascade/_cascade_cuda.py``), and ``groupRectangles`` on the host with the clip (``_group.py``)."""
