"""The ONNX detector on a tiny YOLO-format model the test builds itself: the output layouts it reads, the score
threshold, non-maximum suppression per class, box scaling to the image, depth and a clear error for a bad file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from coteam.senses.vision import CameraIntrinsics, OnnxDetector, RGBDFrame

CLASSES = ["apple", "mug"]
SIZE = 64  # the model's input, square


def tiny_model(path: Path, predictions: np.ndarray) -> Path:
    """A model that answers ``predictions`` whatever the image (its output still depends on the input)."""
    nodes = [
        helper.make_node("ReduceMean", ["images"], ["mean"], axes=[1, 2, 3], keepdims=1),
        helper.make_node("Reshape", ["mean", "shape"], ["mean3"]),
        helper.make_node("Mul", ["mean3", "zero"], ["nothing"]),
        helper.make_node("Add", ["predictions", "nothing"], ["output0"]),
    ]
    graph = helper.make_graph(
        nodes,
        "tiny-yolo",
        [helper.make_tensor_value_info("images", TensorProto.FLOAT, [1, 3, SIZE, SIZE])],
        [helper.make_tensor_value_info("output0", TensorProto.FLOAT, list(predictions.shape))],
        initializer=[
            numpy_helper.from_array(predictions.astype(np.float32), "predictions"),
            numpy_helper.from_array(np.array([1, 1, 1], np.int64), "shape"),
            numpy_helper.from_array(np.array([0.0], np.float32), "zero"),
        ],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


# cx, cy, w, h (model input pixels), then a score per class
BOXES = np.array(
    [
        [16, 16, 8, 8, 0.9, 0.1],  # an apple
        [17, 17, 8, 8, 0.8, 0.0],  # the same apple again: suppressed
        [17, 17, 8, 8, 0.0, 0.7],  # a mug right there: another class, kept
        [48, 40, 8, 8, 0.1, 0.6],  # a mug
        [40, 8, 8, 8, 0.2, 0.1],  # below the threshold
    ]
)


@pytest.mark.parametrize("layout", ["yolov8", "transposed", "yolov5"])
def test_decoding_thresholds_and_suppression(tmp_path: Path, layout: str):
    if layout == "yolov8":
        predictions = BOXES.T[None]  # (1, 4 + C, N)
    elif layout == "transposed":
        predictions = BOXES[None]  # (1, N, 4 + C)
    else:  # objectness 1.0, then the class scores
        predictions = np.insert(BOXES, 4, 1.0, axis=1)[None]
    detector = OnnxDetector(str(tiny_model(tmp_path / "m.onnx", predictions)), CLASSES, input_size=(SIZE, SIZE))
    rgb = np.zeros((48, 128, 3), np.uint8)  # not the model's size: boxes are scaled back (x2 across, x0.75 down)
    depth = np.full((48, 128), 2.0, np.float32)
    intrinsics = CameraIntrinsics.from_fov(128, 48, 60.0)
    found = sorted(detector.detect(RGBDFrame(rgb, depth, intrinsics, None)), key=lambda d: (d.name, d.pixel))
    assert [(d.name, d.pixel, round(d.confidence, 2)) for d in found] == [
        ("apple", (32.0, 12.0), 0.9),
        ("mug", (34.0, 12.75), 0.7),
        ("mug", (96.0, 30.0), 0.6),
    ]
    assert all(d.object_id == -1 and d.depth_m == 2.0 and d.detector == "onnx" for d in found)
    assert found[0].point == pytest.approx(tuple(intrinsics.ray(32.0, 12.0) * 2.0))


def test_a_model_that_does_not_fit_the_classes_or_is_no_model_says_so(tmp_path: Path):
    model = tiny_model(tmp_path / "m.onnx", BOXES.T[None])
    detector = OnnxDetector(str(model), ["apple", "mug", "plate"], input_size=(SIZE, SIZE))
    with pytest.raises(ValueError, match=r"neither 4 \+ 3 nor 5 \+ 3"):
        detector.detect(
            RGBDFrame(
                np.zeros((SIZE, SIZE, 3), np.uint8),
                np.ones((SIZE, SIZE), np.float32),
                CameraIntrinsics.from_fov(SIZE, SIZE, 60),
                None,
            )
        )
    (tmp_path / "bad.onnx").write_bytes(b"not a model")
    with pytest.raises(ValueError, match=r"bad\.onnx: not an ONNX model"):
        OnnxDetector(str(tmp_path / "bad.onnx"), CLASSES)
