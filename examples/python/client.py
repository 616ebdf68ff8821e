"""A gRPC client of the service in Python with grpcio: no generated code.

The messages come from the service's own schema, compiled by the `buf` the
repository ships (`npx buf build`) into a descriptor set on first run. Prints
each call and its answer; runs from any folder. It completes the session it
answers, so that it leaves no round open: run again, it prints the same.

    TOKEN=... /usr/bin/python3 examples/python/client.py

GRPC_TARGET (default 127.0.0.1:8080), QUIZ_ID (default 1) and DESCRIPTORS
(default: practice.binpb next to this file) change what it uses.
"""

import os
import subprocess
import sys

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
DESCRIPTORS = os.environ.get("DESCRIPTORS", os.path.join(HERE, "practice.binpb"))
TARGET = os.environ.get("GRPC_TARGET", "127.0.0.1:8080")
QUIZ_ID = os.environ.get("QUIZ_ID", "1")


def fail(line):
    print(line, file=sys.stderr)
    sys.exit(1)


def load_messages():
    """The request and response classes of proto/practice/v1, by full name."""
    if not os.path.exists(DESCRIPTORS):
        buf = os.path.join(REPO, "node_modules", ".bin", "buf")
        if not os.path.exists(buf):
            fail("no buf: run `npm ci` in the repository first")
        subprocess.run([buf, "build", "-o", DESCRIPTORS], cwd=REPO, check=True)
    files = descriptor_pb2.FileDescriptorSet()
    with open(DESCRIPTORS, "rb") as f:
        files.ParseFromString(f.read())
    pool = descriptor_pool.DescriptorPool()
    for file in files.file:
        pool.Add(file)
    # GetMessageClass is protobuf 4.22+; Debian 12 has 4.21, with MessageFactory.
    factory = message_factory.MessageFactory(pool)
    make = getattr(message_factory, "GetMessageClass", factory.GetPrototype)
    classes = {}
    for file in files.file:
        if file.package == "practice.v1":
            for message in pool.FindFileByName(file.name).message_types_by_name.values():
                classes[message.full_name] = make(message)
    return classes

token = os.environ.get("TOKEN")
if not token:
    fail("set TOKEN: `npm start` prints one for user demo, or run `npm run token -- alice`")
messages = load_messages()
channel = grpc.insecure_channel(TARGET)
metadata = [("authorization", "Bearer " + token)]


def call(service, method, request_type, response_type, **fields):
    rpc = channel.unary_unary(
        f"/practice.v1.{service}/{method}",
        request_serializer=lambda m: m.SerializeToString(),
        response_deserializer=messages[f"practice.v1.{response_type}"].FromString,
    )
    return rpc(messages[f"practice.v1.{request_type}"](**fields), metadata=metadata, timeout=10)


try:
    quiz = call("QuizService", "GetQuiz", "GetQuizRequest", "GetQuizResponse", quiz_id=QUIZ_ID).quiz
    print(f'GetQuiz({QUIZ_ID}) -> "{quiz.title}", {len(quiz.questions)} questions')
    started = call(
        "PracticeSessionService", "StartSession", "StartSessionRequest", "StartSessionResponse",
        quiz_id=QUIZ_ID,
    )
    state = "created" if started.created else "resumed"
    # A resumed review or missed round holds only some of the quiz: say which it is.
    modes = started.session.DESCRIPTOR.fields_by_name["mode"].enum_type.values_by_number
    mode = modes[started.session.mode].name.removeprefix("SESSION_MODE_").lower()
    print(
        f"StartSession({QUIZ_ID}) -> {state} session {started.session.id}"
        f" ({mode}, {started.session.total_questions} questions)"
    )
    # A resumed session may hold only some of the quiz (a review, or what was
    # missed): answer its first question still open.
    done = {a.question_id for a in started.session.answers}
    open_ids = [q.question_id for q in started.questions if q.question_id and q.question_id not in done]
    first = next((q for q in quiz.questions if open_ids and q.id == open_ids[0]), None)
    if first is not None:
        try:
            answered = call(
                "PracticeSessionService", "SubmitAnswer", "SubmitAnswerRequest", "SubmitAnswerResponse",
                session_id=started.session.id, question_id=first.id, user_answer="Paris",
            )
            verdict = "right" if answered.answer.is_correct else "wrong"
            print(f'SubmitAnswer("{first.prompt}", "Paris") -> {verdict}')
        except grpc.RpcError as err:
            print(f'SubmitAnswer("{first.prompt}", "Paris") -> {err.code().name}: {err.details()}')
    # Done: no round is left open, and the next run starts a new one.
    done = call(
        "PracticeSessionService", "CompleteSession", "CompleteSessionRequest",
        "CompleteSessionResponse", session_id=started.session.id,
    ).session
    print(
        f"CompleteSession({started.session.id}) -> {done.correct_answers} of"
        f" {done.total_questions} right: {done.score_percentage}%"
    )
    page = call(
        "PracticeSessionService", "ListSessions", "ListSessionsRequest", "ListSessionsResponse",
        quiz_id=QUIZ_ID, limit=1,
    )
    newest = page.sessions[0] if page.sessions else None
    shown = "none" if newest is None else (
        f"{newest.id} {newest.score_percentage}%" if newest.HasField("completed_at")
        else f"{newest.id} in progress"
    )
    print(f"ListSessions({QUIZ_ID}) -> newest first: {shown}")
    try:
        call("QuizService", "GetQuiz", "GetQuizRequest", "GetQuizResponse", quiz_id="999999")
    except grpc.RpcError as err:
        print(f"GetQuiz(999999) -> {err.code().name}: {err.details()}")
except grpc.RpcError as err:
    if err.code() == grpc.StatusCode.UNAVAILABLE:
        fail(f"cannot reach {TARGET}: {err.details()} (is `npm start` running? set GRPC_TARGET)")
    fail(f"call failed: {err.code().name}: {err.details()}")
finally:
    channel.close()
