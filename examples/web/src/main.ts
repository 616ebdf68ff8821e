import { timestampDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-web";
// The repository's generated code (buf generate → gen/). In your app, import
// your own copy of it, or the package your team publishes it in.
import {
  type PracticeSession,
  PracticeSessionService,
  SessionStatus,
} from "../../../gen/practice/v1/practice_session_service_pb.js";
import { readConfig } from "./config.js";

const PAGE_SIZE = 20;
const config = readConfig();

// Every call carries the bearer token; the service answers `unauthenticated` without it.
const bearer: Interceptor = (next) => (req) => {
  req.header.set("authorization", `Bearer ${config.token}`);
  return next(req);
};
const transportOptions = { baseUrl: config.serviceUrl, interceptors: [bearer] };
const client = createClient(
  PracticeSessionService,
  config.protocol === "grpc-web"
    ? createGrpcWebTransport(transportOptions)
    : createConnectTransport(transportOptions),
);

function element<T extends HTMLElement>(id: string): T {
  const found = document.getElementById(id);
  if (!found) throw new Error(`#${id} is missing from the page`);
  return found as T;
}

const ui = {
  quizId: element("quiz-id"),
  error: element<HTMLParagraphElement>("error"),
  start: element<HTMLButtonElement>("start"),
  startResult: element<HTMLParagraphElement>("start-result"),
  answersHeading: element("answers-heading"),
  answers: element<HTMLOListElement>("answers"),
  status: element<HTMLSelectElement>("status"),
  history: element<HTMLTableSectionElement>("history"),
  historyStatus: element<HTMLParagraphElement>("history-status"),
  more: element<HTMLButtonElement>("more"),
};

const dateFormat = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });

function showError(err: unknown) {
  const e = ConnectError.from(err);
  const hint =
    e.code === Code.Unauthenticated
      ? " Check the token."
      : e.code === Code.NotFound
        ? " Check the quiz id."
        : e.code === Code.Unknown || e.code === Code.Unavailable
          ? " Is the service running, and is this page's origin in its CORS_ORIGINS?"
          : "";
  ui.error.textContent = `${e.message}.${hint}`;
  ui.error.hidden = false;
}

function clearError() {
  ui.error.hidden = true;
  ui.error.textContent = "";
}

// ---- Start or resume -------------------------------------------------------

async function startOrResume() {
  clearError();
  ui.start.disabled = true;
  try {
    const { session, created } = await client.startSession({ quizId: config.quizId });
    if (!session) throw new Error("the service sent no session");
    const answered = session.answers.length;
    ui.startResult.dataset.sessionId = session.id;
    ui.startResult.dataset.created = String(created);
    ui.startResult.textContent =
      `${created ? "Created a new session" : "Resumed your session"} ${session.id}: ` +
      `${answered} of ${session.totalQuestions} questions answered, ${session.correctAnswers} correct.`;
    showAnswers(session);
    // A new session is the newest entry of the history.
    if (created) await loadHistory(true);
  } catch (err) {
    showError(err);
  } finally {
    ui.start.disabled = false;
  }
}

function showAnswers(session: PracticeSession) {
  ui.answersHeading.hidden = session.answers.length === 0;
  ui.answers.replaceChildren(
    ...session.answers.map((answer) => {
      const item = document.createElement("li");
      const question =
        answer.questionId === undefined ? "a deleted question" : `question ${answer.questionId}`;
      const verdict =
        answer.isCorrect === undefined ? "" : answer.isCorrect ? " (correct)" : " (incorrect)";
      item.textContent = `“${answer.userAnswer ?? ""}” to ${question}${verdict}`;
      return item;
    }),
  );
}

// ---- History ---------------------------------------------------------------

const STATUS: Record<string, SessionStatus> = {
  all: SessionStatus.UNSPECIFIED,
  completed: SessionStatus.COMPLETED,
  active: SessionStatus.ACTIVE,
};

const history = { cursor: "", shown: 0, generation: 0 };

/** Loads the next page, or (reset) the first page for the selected status. */
async function loadHistory(reset: boolean) {
  if (reset) {
    history.generation++;
    history.cursor = "";
    history.shown = 0;
    ui.history.replaceChildren();
    ui.more.hidden = true;
  }
  const generation = history.generation;
  const current = () => generation === history.generation;
  ui.more.disabled = true;
  ui.historyStatus.textContent = "Loading…";
  try {
    const page = await client.listSessions({
      quizId: config.quizId,
      status: STATUS[ui.status.value] ?? SessionStatus.UNSPECIFIED,
      limit: PAGE_SIZE,
      cursor: history.cursor,
    });
    // The filter changed while this page was on its way: a newer load owns the table.
    if (!current()) return;
    ui.history.append(...page.sessions.map(historyRow));
    history.shown += page.sessions.length;
    history.cursor = page.nextCursor;
    const moveFocus = !page.hasMore && document.activeElement === ui.more;
    ui.more.hidden = !page.hasMore;
    ui.historyStatus.textContent =
      history.shown === 0
        ? "No sessions."
        : page.hasMore
          ? `Showing the newest ${history.shown} sessions.`
          : history.shown === 1
            ? "1 session shown."
            : `All ${history.shown} sessions shown.`;
    // The focused button just disappeared: keep keyboard users where they were.
    if (moveFocus) ui.historyStatus.focus();
  } catch (err) {
    if (!current()) return;
    showError(err);
    ui.historyStatus.textContent = "Could not load the history.";
  } finally {
    if (current()) ui.more.disabled = false;
  }
}

function historyRow(session: PracticeSession): HTMLTableRowElement {
  const row = document.createElement("tr");
  row.dataset.sessionId = session.id;

  const started = document.createElement("time");
  if (session.startedAt) {
    const date = timestampDate(session.startedAt);
    started.dateTime = date.toISOString();
    started.textContent = dateFormat.format(date);
  }
  const result =
    session.completedAt && session.scorePercentage !== undefined
      ? `${session.scorePercentage}%`
      : "in progress";
  const correct = `${session.correctAnswers} / ${session.totalQuestions}`;

  const cells = [started, result, correct].map((content) => {
    const cell = document.createElement("td");
    cell.append(content);
    return cell;
  });
  cells[1]?.classList.add(session.completedAt ? "score" : "in-progress");
  row.append(...cells);
  return row;
}

// ---- Wiring ----------------------------------------------------------------

ui.quizId.textContent = config.quizId || "?";
ui.historyStatus.tabIndex = -1;
if (!config.token || !config.quizId) {
  ui.error.textContent =
    "Set the service URL, token and quiz id: ?service=http://127.0.0.1:8080&token=…&quiz=1 (see README).";
  ui.error.hidden = false;
  ui.start.disabled = true;
  ui.status.disabled = true;
} else {
  ui.start.addEventListener("click", () => void startOrResume());
  ui.status.addEventListener("change", () => void loadHistory(true));
  ui.more.addEventListener("click", () => void loadHistory(false));
  void loadHistory(true);
}
