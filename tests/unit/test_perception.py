"""coteam.senses.perception: detections fused into a semantic map (no ROS)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from coteam.domain.observation import ObjectView
from coteam.domain.world import ObjectKind, Relation
from coteam.senses.perception import Detection, SemanticMapFusion, SemanticObject, detection_from_view


def det(oid: int, step: int, **kw) -> Detection:
    fields = {
        "name": f"obj{oid}",
        "object_id": oid,
        "category": "food",
        "room": "kitchen",
        "container": "",
        "position": (float(oid), 0.0),
        "confidence": 1.0,
        "step": step,
    }
    return Detection(**(fields | kw))


def test_new_objects_are_added_and_sorted_by_id():
    fusion = SemanticMapFusion()
    changed = fusion.update([det(31, 0, name="fridge", category="container"), det(21, 0, name="apple")], 0, "kitchen")
    assert changed == [21, 31]
    assert [o.object_id for o in fusion.objects()] == [21, 31]
    apple = fusion.get(21)
    assert apple == SemanticObject("apple", 21, "food", "kitchen", "", (21.0, 0.0), 0, "", 1.0)
    assert 21 in fusion and len(fusion) == 2


def test_redetection_takes_the_newest_sighting():
    fusion = SemanticMapFusion()
    fusion.update([det(21, 0, container="fridge", confidence=0.9)], 0, "kitchen")
    fusion.update([det(21, 5, room="livingroom", container="coffeetable", position=(4.0, 2.5), confidence=0.6)], 5)
    apple = fusion.get(21)
    assert (apple.room, apple.container, apple.position) == ("livingroom", "coffeetable", (4.0, 2.5))
    assert (apple.last_seen_step, apple.confidence) == (5, 0.6)  # newest wins, no averaging
    assert len(fusion) == 1


def test_late_detection_from_an_older_step_does_not_overwrite():
    fusion = SemanticMapFusion()
    fusion.update([det(21, 8, position=(8.0, 8.0))], 8)
    assert fusion.update([det(21, 3, position=(3.0, 3.0))], 8) == []
    assert fusion.get(21).position == (8.0, 8.0)
    fusion.update([det(21, 8, position=(9.0, 9.0))], 8)  # same step, later batch: wins
    assert fusion.get(21).position == (9.0, 9.0)


def test_duplicate_id_in_one_batch_keeps_the_most_confident():
    fusion = SemanticMapFusion()
    fusion.update([det(21, 0, position=(1.0, 1.0), confidence=0.9), det(21, 0, position=(2.0, 2.0), confidence=0.4)], 0)
    assert fusion.get(21).position == (1.0, 1.0)


def test_holder_changes():
    fusion = SemanticMapFusion()
    fusion.update([det(21, 0, container="fridge")], 0, "kitchen")
    fusion.update([det(21, 1, holder="bob", position=(2.0, 1.0))], 1, "kitchen")
    apple = fusion.get(21)
    assert (apple.holder, apple.container, apple.position) == ("bob", "", (2.0, 1.0))
    fusion.update([det(21, 4, room="livingroom", container="coffeetable")], 4, "livingroom")
    assert (fusion.get(21).holder, fusion.get(21).container) == ("", "coffeetable")


def test_missed_object_is_kept_and_marked_unconfirmed():
    fusion = SemanticMapFusion()
    fusion.update([det(21, 0), det(22, 0, room="bedroom"), det(23, 0, holder="bob")], 0, "kitchen")
    fusion.update([], 3, "kitchen")  # in the kitchen, the apple (21) is not seen
    fusion.update([], 4, "kitchen")
    apple = fusion.get(21)
    assert apple is not None and apple.last_seen_step == 0 and apple.unconfirmed_since == 3
    assert fusion.get(22).unconfirmed_since == -1  # in another room
    assert fusion.get(23).unconfirmed_since == -1  # held: moves with its holder
    fusion.update([det(21, 6)], 6, "kitchen")
    assert fusion.get(21).unconfirmed_since == -1 and fusion.get(21).last_seen_step == 6
    fusion.update([], 7)  # robot room unknown: nothing is marked
    assert fusion.get(21).unconfirmed_since == -1


def test_stale_objects_are_kept_by_default_and_forgotten_when_asked():
    keep = SemanticMapFusion()
    keep.update([det(21, 0)], 0, "kitchen")
    keep.update([], 10_000, "bedroom")
    assert keep.get(21).last_seen_step == 0

    forget = SemanticMapFusion(forget_after_steps=10)
    forget.update([det(21, 0), det(22, 5)], 5)
    forget.update([], 10)
    assert [o.object_id for o in forget.objects()] == [21, 22]  # 10 steps old: still kept
    forget.update([], 11)
    assert [o.object_id for o in forget.objects()] == [22]
    with pytest.raises(ValueError):
        SemanticMapFusion(forget_after_steps=-1)


def test_low_confidence_detections_are_ignored():
    fusion = SemanticMapFusion(min_confidence=0.5)
    assert fusion.update([det(21, 0, confidence=0.49), det(22, 0, confidence=0.5)], 0) == [22]
    assert fusion.get(21) is None
    fusion.update([det(22, 1, position=(7.0, 7.0), confidence=0.1)], 1)
    assert fusion.get(22).position == (22.0, 0.0)  # a weak re-detection does not move a known object


def test_explored_rooms_accumulate_in_order():
    fusion = SemanticMapFusion()
    fusion.update([], 0, "kitchen", explored_rooms=["kitchen"])
    fusion.update([], 1, "bedroom", explored_rooms=["bedroom", "kitchen"])
    assert fusion.explored_rooms == ["kitchen", "bedroom"]


def test_json_roundtrip():
    fusion = SemanticMapFusion(min_confidence=0.25, forget_after_steps=50)
    fusion.update([det(21, 0, container="fridge"), det(40, 0, name="sofa", category="surface")], 0, "kitchen")
    fusion.update([det(21, 2, holder="alice", position=(1.5, -2.25))], 3, "kitchen", explored_rooms=["kitchen"])
    text = fusion.to_json()
    json.loads(text)  # plain JSON
    copy = SemanticMapFusion.from_json(text)
    assert copy.objects() == fusion.objects()
    assert isinstance(copy.get(21).position, tuple)
    assert (copy.min_confidence, copy.forget_after_steps, copy.step) == (0.25, 50, 3)
    assert copy.explored_rooms == ["kitchen"]
    assert copy.to_json() == text
    # the copy keeps fusing with the same rules
    copy.update([det(21, 1, position=(0.0, 0.0))], 4)
    assert copy.get(21).position == (1.5, -2.25)
    with pytest.raises(ValueError):
        SemanticMapFusion.from_dict({**json.loads(text), "format": 99})


def test_detection_from_view_matches_the_observation_model():
    names = {1: "kitchen", 31: "fridge", 40: "dinnertable"}
    inside = ObjectView(21, "apple", ObjectKind.ITEM, 1, (2, 3), "food", location=Relation.IN, holder=31)
    held = ObjectView(22, "plate", ObjectKind.ITEM, 1, (4.0, 1.0), "", location=Relation.HELD, held_by="bob")
    fridge = ObjectView(31, "fridge", ObjectKind.CONTAINER, 1, (0.5, 0.5), is_open=False)
    a = detection_from_view(inside, 7, names)
    assert a == Detection("apple", 21, "food", "kitchen", "fridge", (2.0, 3.0), 1.0, 7)
    p = detection_from_view(held, 7, names, confidence=0.8)
    assert (p.holder, p.container, p.category, p.confidence) == ("bob", "", "", 0.8)
    assert detection_from_view(fridge, 7, names).category == "container"


def test_confidence_grows_with_sightings_at_one_place_and_starts_over_where_it_moved():
    fusion = SemanticMapFusion()
    fusion.update([det(21, 0, confidence=0.6)], 0)
    fusion.update([det(21, 1, confidence=0.6, position=(21.2, 0.0))], 1)  # the same place, within 0.5 m
    assert fusion.get(21).confidence == pytest.approx(0.84)
    fusion.update([det(21, 2, confidence=0.6, position=(25.0, 0.0))], 2)  # moved
    assert fusion.get(21).confidence == pytest.approx(0.6)


def test_anonymous_detections_are_associated_by_category_and_distance():
    fusion = SemanticMapFusion(association_radius_m=0.5, confirm_hits=1)  # each sighting joins the map at once
    fusion.update([det(-1, 0, name="apple", category="food", position=(1.0, 1.0), confidence=0.5)], 0)
    fusion.update(
        [
            det(-1, 1, name="apple", category="food", position=(1.2, 1.1), confidence=0.5),  # the same apple
            det(-1, 1, name="plate", category="stuff", position=(1.1, 1.0), confidence=0.5),  # near, other class
            det(-1, 1, name="apple", category="food", position=(5.0, 1.0), confidence=0.5),  # another apple
        ],
        1,
    )
    objects = {o.object_id: o for o in fusion.objects()}
    assert sorted(objects) == [-3, -2, -1] and all(scene_id < 0 for scene_id in objects)
    assert objects[-1].confidence == pytest.approx(0.75) and objects[-1].position == (1.2, 1.1)
    assert {objects[-2].name, objects[-3].name} == {"plate", "apple"}
    copy = SemanticMapFusion.from_json(fusion.to_json())
    assert copy.update([det(-1, 2, name="pear", category="fruit", position=(9.0, 9.0))], 2) == [-4]


def test_two_objects_of_a_class_in_one_frame_stay_two_however_close():
    """A class-only detector gives two cups in one fridge at one place: each detection of a frame stands for its own
    map object, in that frame and the next, so a fridge holding two cups never shows as holding one."""
    fusion = SemanticMapFusion(association_radius_m=0.5, confirm_hits=1)
    cup = {"name": "cup", "category": "food", "position": (1.0, 1.0)}
    first = fusion.update([det(-1, 0, **cup), det(-1, 0, **cup)], 0)
    assert len(first) == 2 and len(fusion) == 2
    assert sorted(fusion.update([det(-1, 1, **cup), det(-1, 1, **cup)], 1)) == sorted(first)
    assert len(fusion.update([det(-1, 2, **cup)], 2)) == 1 and len(fusion) == 2


def test_an_anonymous_object_joins_the_map_when_seen_again_in_time_and_a_one_frame_sighting_never_does():
    """A learned detector's false detection lasts a frame; a real object is seen again. A new anonymous object is
    tentative until its second sighting within ``confirm_within`` steps (then it joins with both sightings'
    confidence); one not seen again in time is dropped. A detector's id is trusted at once."""
    fusion = SemanticMapFusion(confirm_within=3)
    apple = {"name": "apple", "category": "food", "confidence": 0.5}
    assert fusion.update([det(-1, 0, position=(1.0, 1.0), **apple)], 0) == [] and len(fusion) == 0
    (joined,) = fusion.update([det(-1, 2, position=(1.2, 1.0), **apple)], 2)
    assert fusion.get(joined).confidence == pytest.approx(0.75) and fusion.get(joined).position == (1.2, 1.0)
    assert fusion.update([det(-1, 3, position=(6.0, 1.0), **apple)], 3) == []  # a false one
    for step in range(4, 8):
        assert fusion.update([], step) == []
    assert fusion.update([det(-1, 8, position=(6.0, 1.0), **apple)], 8) == [], "too late: tentative again"
    assert [o.object_id for o in fusion.objects()] == [joined]
    assert fusion.update([det(21, 9)], 9) == [21]
    with pytest.raises(ValueError, match="confirm_hits"):
        SemanticMapFusion(confirm_hits=0)


def test_a_place_seen_empty_loses_confidence_until_it_is_forgotten():
    fusion = SemanticMapFusion(empty_decay=0.5, drop_below=0.15)
    fusion.update([det(21, 0, confidence=0.8), det(22, 0, holder="bob")], 0)
    assert fusion.seen_empty([21, 22, 99], 1) == []
    assert fusion.get(21).confidence == pytest.approx(0.4) and fusion.get(22).confidence == 1.0  # held: moves along
    assert fusion.seen_empty([21], 2) == [] and fusion.seen_empty([21], 3) == [21]
    assert 21 not in fusion
    with pytest.raises(ValueError, match="empty_decay"):
        SemanticMapFusion(empty_decay=1.0)


def _one_frame_map() -> SemanticMapFusion:
    """A map that takes an anonymous object in on its first sighting: the label tests below see each apple once."""
    return SemanticMapFusion(confirm_hits=1)


def _two_apples_scene():
    from coteam.domain.world import Benchmark, Container, FloorPlan, Item, Room, Scene, Task

    rows = tuple("." * 20 for _ in range(10))
    floorplan = FloorPlan(0.5, rows, (Room(1, "kitchen", 0, 0, 20, 10),))
    fridge, cabinet = Container(2, "fridge", 1, (1.0, 1.0)), Container(3, "cabinet", 1, (8.0, 4.0))
    items = (Item(10, "apple", "food"), Item(11, "apple", "food"), Item(12, "wine", "food"))
    task = Task("t", Benchmark.CWAH, (), "", 10)
    return Scene("apples", Benchmark.CWAH, 0, floorplan, (fridge, cabinet), (), items, {}, (), task)


def test_class_only_sightings_stand_for_task_instances_and_the_hand_camera_corrects_them():
    from coteam.domain.observation import Observation
    from coteam.senses.perception import CameraPerception, ObservationAssembler

    scene = _two_apples_scene()
    camera = CameraPerception(ObservationAssembler("alice", scene), _one_frame_map())
    empty = Observation("alice", 0, 0, (5.0, 2.0), 0, 1, (None, None), visible=())

    def apple(x: float, y: float) -> Detection:
        return Detection("apple", -1, "food", "kitchen", "", (x, y), 1.0, 0)

    near_fridge = camera.frame([apple(1.2, 1.0)], "kitchen").confirmed
    near_cabinet = camera.frame([apple(8.0, 4.3)], "kitchen").confirmed
    seen = camera.merged(empty, near_fridge + near_cabinet)
    views = {v.id: v for v in seen.visible}
    assert set(views) == {10, 11}, "two apples seen from afar: the task's two apples, one each"
    assert (views[10].holder, views[11].holder) == (2, 3), "each on the fixture it was seen on"
    again = camera.frame([apple(1.1, 1.0)], "kitchen").confirmed
    assert [v.id for v in camera.merged(empty, again).visible] == [10], "a binding holds"
    # at the cabinet the hand camera shows apple 10 there: the sighting there stands for 10, the other is released
    at_hand = ObjectView(10, "apple", ObjectKind.ITEM, 1, (8.0, 4.0), "food", Relation.IN, 3)
    there = camera.frame([apple(8.0, 4.2)], "kitchen").confirmed
    assert camera.merged(replace(empty, visible=(at_hand,)), there).visible == (at_hand,)
    assert camera.bound == {near_cabinet[0]: 10}
    assert [v.id for v in camera.merged(empty, again).visible] == [11], "the fridge's apple is the other one"
    third = camera.frame([apple(15.0, 4.0)], "kitchen").confirmed
    assert camera.merged(empty, third).visible == (), "no third apple in the task: not shown"


def test_an_object_seen_where_my_arm_put_an_item_of_its_class_takes_that_items_label():
    """The arm put apple 10 (taken from the cabinet) in the fridge; the camera then sees an anonymous apple there.
    The label of the map object seen at the cabinet still stands, yet the apple in the fridge is 10 (the arm's
    word), not the free label 11: the robot does not count one apple in the fridge twice."""
    from coteam.domain.observation import Observation
    from coteam.senses.perception import CameraPerception, ObservationAssembler

    scene = _two_apples_scene()
    assembler = ObservationAssembler("alice", scene)
    camera = CameraPerception(assembler, _one_frame_map())
    empty = Observation("alice", 0, 0, (5.0, 2.0), 0, 1, (None, None), visible=())

    def apple(x: float, y: float) -> Detection:
        return Detection("apple", -1, "food", "kitchen", "", (x, y), 1.0, 0)

    at_cabinet = camera.frame([apple(8.0, 4.2)], "kitchen").confirmed
    assert [v.id for v in camera.merged(empty, at_cabinet).visible] == [10]
    camera.merged(assembler.observation(1, (8.0, 4.0), 0, [], holding=[10]), [])  # grasped
    camera.merged(assembler.observation(2, (1.0, 1.5), 0, [], placed={10: (2, True)}), [])  # into the fridge
    for _ in range(2):  # the camera sees it there in the frames after the put-down
        in_fridge = camera.frame([apple(1.1, 1.0)], "kitchen").confirmed
        views = {v.id: v for v in camera.merged(empty, in_fridge).visible}
        assert list(views) == [10] and views[10].holder == 2, "the label the arm gave it, not the free 11"


def test_a_label_held_by_an_object_unseen_where_it_should_be_goes_to_the_next_one_of_its_class():
    """A false detection binds a task's apple label to nothing real: once the robot has looked at its place for
    ``release_after`` frames without seeing it, the real apple seen next takes the label (the task has no other)."""
    from coteam.domain.observation import Observation
    from coteam.senses.perception import CameraPerception, ObservationAssembler

    scene = _two_apples_scene()
    camera = CameraPerception(ObservationAssembler("alice", scene), _one_frame_map(), release_after=3)
    empty = Observation("alice", 0, 0, (5.0, 2.0), 0, 1, (None, None), visible=())

    def apple(x: float, y: float) -> Detection:
        return Detection("apple", -1, "food", "kitchen", "", (x, y), 1.0, 0)

    first = camera.frame([apple(1.0, 1.0)], "kitchen").confirmed
    second = camera.frame([apple(8.0, 4.0)], "kitchen").confirmed  # the false one
    assert {v.id for v in camera.merged(empty, first + second).visible} == {10, 11}
    third = camera.frame([apple(1.0, 1.0), apple(5.0, 8.0)], "kitchen").confirmed
    assert [v.id for v in camera.merged(empty, third).visible] == [10], "both labels held: the third is not shown"
    for _ in range(3):
        camera.frame([apple(1.0, 1.0)], "kitchen")  # the place at (8, 4) seen empty, frame after frame
    again = camera.frame([apple(1.0, 1.0), apple(5.0, 8.0)], "kitchen").confirmed
    assert {v.id for v in camera.merged(empty, again).visible} == {10, 11}, "the false one's label is free again"
