/* Mounts the player (app/view/player/) in the page's gr.HTML and hands it each new payload (app/ui/page_assets.py). */
const mount = element.querySelector('.cv-mount');
const query = new URLSearchParams(window.location.search);
const onPresenter = (on) => document.body.classList.toggle('cv-presenting', on);
let picker = null;  // the presenter's compact picker (app/ui/presenter_picker.js), made on first use
const onPick = () => { picker = picker || window.ConvergePicker(mount); picker.toggle(); };
const player = window.ConvergePlayer.create(mount, {presenter: query.get('presenter') === '1', onPresenter, onPick});
const show = () => {
  if (!props.payload) return;
  const data = JSON.parse(props.payload);
  player.update(data);
  if (data.reveal) mount.scrollIntoView({block: 'start'});  // a recording loaded from the library shows itself
};
show();
/* The prop's name is never written in quotes in this script: Gradio (gradio/components/html.py __getattr__) reads a
   quoted name in js_on_load as a custom event, and then put that event's Python repr (heap addresses) beside the
   prop in every reply that updated it. */
watch(Object.keys({payload: null})[0], show);
