import { createClients, describeError, tokenSubject } from "./client.js";
import { readConfig } from "./config.js";
import { element } from "./dom.js";
import { History } from "./history.js";
import { Practice } from "./practice.js";

/**
 * The practice page: practise one quiz (questions, answers with feedback,
 * completion, score and review) and see the history of one's sessions on it
 * with a chart of the scores. Wiring only; see practice.ts and history.ts.
 */

const config = readConfig();
const crossOrigin =
  new URL(config.serviceUrl, window.location.href).origin !== window.location.origin;
const clients = createClients(config);
const errorBox = element<HTMLParagraphElement>("error");

const errors = {
  show(err: unknown) {
    errorBox.textContent = describeError(err, crossOrigin);
    errorBox.hidden = false;
  },
  clear() {
    errorBox.hidden = true;
    errorBox.textContent = "";
  },
};

const history = new History(clients, config.quizId, (err) => errors.show(err));
const practice = new Practice(clients, config.quizId, history, errors);

const user = tokenSubject(config.token);
element("who").textContent = user ? `Signed in as ${user}` : "";

if (!config.token || !config.quizId) {
  element("quiz-title").textContent = "Which quiz?";
  errorBox.textContent =
    "This page needs a quiz and a token: open it from the link `npm start` prints " +
    "(…/practice/?quiz=1#token=…), or see examples/web/README.md.";
  errorBox.hidden = false;
  history.disable();
} else {
  void practice.open();
  void history.refresh();
}
