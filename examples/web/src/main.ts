import { Catalog } from "./catalog.js";
import { createClients, tokenSubject } from "./client.js";
import { readConfig } from "./config.js";
import { DeviceStore } from "./device-store.js";
import { element } from "./dom.js";
import { History } from "./history.js";
import { Practice } from "./practice.js";
import { Reporter } from "./report.js";
import { Sender, type SenderListener } from "./sender.js";

/**
 * The practice page, wiring only: without a quiz, the list of quizzes; with one,
 * practising it (practice.ts) and the history of one's sessions (history.ts).
 */

const config = readConfig();
const crossOrigin =
  new URL(config.serviceUrl, window.location.href).origin !== window.location.origin;
const report = new Reporter(element("notice"), crossOrigin);
const user = tokenSubject(config.token);
element("who").textContent = user ? `Signed in as ${user}` : "";

if (!config.token) {
  // The notice says it all: no card to fill.
  report.page(
    "This page needs a sign-in token at the end of its address (…/practice/#token=…). " +
      "Open the link the service prints when it starts, or add #token= and a token to this " +
      "address: in the service's folder, npm run -s token -- alice prints one for the user alice.",
  );
} else {
  const clients = createClients(config);
  const store = new DeviceStore(user || "anonymous");
  store.sweep();
  if (!config.quizId) {
    const catalog = new Catalog(clients, report);
    // Answers kept from earlier visits still go out from the list.
    const quiet: SenderListener = {
      sending() {},
      answerSent() {},
      answerRefused() {},
      completed() {},
      completeRefused() {},
      waiting() {},
      signedOut: () => report.signOut(),
      idle() {},
    };
    new Sender(store, clients, quiet).start();
    void catalog.open();
  } else {
    element("history-section").hidden = false;
    // Back to the list: the same page without `quiz`, the token still in the fragment.
    const list = new URL(window.location.href);
    list.searchParams.delete("quiz");
    element<HTMLAnchorElement>("all-quizzes").href = list.href;
    let practice: Practice | undefined;
    const history = new History(clients, config.quizId, report, (id, opener) => {
      void practice?.review(id, opener);
    });
    practice = new Practice(clients, config.quizId, history, store, report);
    const sender = new Sender(store, clients, practice);
    practice.useSender(sender);
    void history.refresh();
    // Sending starts once the session is on the page, so that it shows each step.
    void practice.open().then(() => sender.start());
  }
}
